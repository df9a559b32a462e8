"""What the rendered network policies of one cluster allow: the slice of Cilium's semantics the site's
policies use (namespace selectors, entities, DNS names, addresses of the world, TCP ports). A connection is allowed when the source's
policy lets it out and the destination's lets it in; a namespace without policy lets everything."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from ipaddress import ip_address, ip_network
from typing import Any

from constructs.network_policy import DEFAULT_DENY, ENTITIES, NAMESPACE_KEY
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


@dataclass(frozen=True)
class End:
    """One end of a connection: a namespace's pods, or an entity (world, kube-apiserver, nodes); of the
    world, an address of a DNS name, a given address, or (neither) any address."""

    namespace: str = ""
    entity: str = ""
    name: str = ""
    address: str = ""

    def __str__(self) -> str:
        return self.namespace or " ".join(p for p in (self.entity, self.name, self.address) if p)


def _in_cidrs(cidrs: Iterable[str], address: str) -> bool:
    """Whether a toCIDR list covers an address (a rule of addresses selects only the world's: Cilium's
    default policy-cidr-match-mode leaves pods and nodes out)."""
    return bool(address) and any(ip_address(address) in ip_network(c) for c in cidrs)


def fqdn_matches(selector: Mapping[str, Any], name: str) -> bool:
    """Whether a toFQDNs selector covers a DNS name: matchName exactly, matchPattern with `*` standing
    for the characters of one label (Cilium pkg/fqdn/matchpattern; no `**`, the site writes none)."""
    if "matchName" in selector:
        return str(selector["matchName"]).lower().rstrip(".") == name.lower()
    pattern = str(selector.get("matchPattern", "")).lower().rstrip(".")
    regex = "^" + re.escape(pattern).replace(r"\*", "[-a-z0-9_]*") + "$"
    return re.match(regex, name.lower()) is not None


def _selects(selector: Mapping[str, Any], policy_namespace: str, peer: End) -> bool:
    """Whether an endpoint selector of a namespaced policy selects every pod of the peer namespace."""
    if not peer.namespace:
        return False
    labels = dict(selector.get("matchLabels") or {})
    namespace = labels.pop(NAMESPACE_KEY, None)
    if labels:  # some pods of a namespace only (kube-dns): not the namespace as a whole
        return False
    expressions = selector.get("matchExpressions") or []
    for expr in expressions:
        if expr["key"] != NAMESPACE_KEY:
            return False
        if not (
            expr["operator"] == "Exists"
            or (expr["operator"] == "In" and peer.namespace in expr.get("values", []))
        ):
            return False
    if namespace is not None:
        return namespace == peer.namespace
    # without a namespace label a selector stays in the policy's namespace, unless it names namespaces
    return bool(expressions) or peer.namespace == policy_namespace


def _entities_cover(entities: list[str], end: End) -> bool:
    """Whether a rule's entities cover an end: its own entity's, or `cluster`, which covers every pod
    and node of the cluster (the API server included), not the world."""
    if "cluster" in entities and (end.namespace or end.entity not in ("", "world")):
        return True
    return bool(end.entity) and any(e in entities for e in ENTITIES[end.entity])


def _port_ok(rule: Mapping[str, Any], port: int | None) -> bool:
    rules = rule.get("toPorts")
    if not rules:
        return True
    if port is None:
        return False
    return any(int(p["port"]) == port for r in rules for p in r.get("ports") or [])


class PolicyView:
    def __init__(self, docs: Iterable[Document]) -> None:
        self.denied: set[str] = set()  # namespaces under a default deny
        self.rules: dict[str, dict[str, list[Mapping[str, Any]]]] = {}  # namespace -> ingress/egress
        for doc in docs:
            if doc.kind == "NetworkPolicy" and doc.name == DEFAULT_DENY:
                spec = doc.body.get("spec") or {}
                if spec.get("podSelector") == {} and set(spec.get("policyTypes") or []) == {
                    "Ingress",
                    "Egress",
                }:
                    self.denied.add(doc.namespace)
            elif doc.kind == "CiliumNetworkPolicy" and dig(doc.body, "spec", "endpointSelector") == {}:
                spec = doc.body["spec"]
                mine = self.rules.setdefault(doc.namespace, {"ingress": [], "egress": []})
                mine["ingress"] += spec.get("ingress") or []
                mine["egress"] += spec.get("egress") or []

    def _out(self, source: End, target: End, port: int | None) -> bool:
        if source.entity or source.namespace not in self.denied:
            return True
        for rule in self.rules.get(source.namespace, {}).get("egress", []):
            if _entities_cover(rule.get("toEntities") or [], target) and _port_ok(rule, port):
                return True
            names = rule.get("toFQDNs") or []
            if target.name and any(fqdn_matches(s, target.name) for s in names) and _port_ok(rule, port):
                return True
            if _in_cidrs(rule.get("toCIDR") or [], target.address) and _port_ok(rule, port):
                return True
            if any(_selects(s, source.namespace, target) for s in rule.get("toEndpoints") or []) and _port_ok(
                rule, port
            ):
                return True
        return False

    def _in(self, source: End, target: End, port: int | None) -> bool:
        if target.entity or target.namespace not in self.denied:
            return True
        for rule in self.rules.get(target.namespace, {}).get("ingress", []):
            if _entities_cover(rule.get("fromEntities") or [], source) and _port_ok(rule, port):
                return True
            selectors = rule.get("fromEndpoints") or []
            if any(_selects(s, target.namespace, source) for s in selectors) and _port_ok(rule, port):
                return True
        return False

    def ingress_ports(self, target: End) -> list[int]:
        """Every port a rule of the target's namespace opens for ingress."""
        return sorted({
            int(p["port"])
            for rule in self.rules.get(target.namespace, {}).get("ingress", [])
            for r in rule.get("toPorts") or []
            for p in r.get("ports") or []
        })  # fmt: skip

    def allows(self, source: End, target: End, port: int | None = None) -> bool:
        return self._out(source, target, port) and self._in(source, target, port)
