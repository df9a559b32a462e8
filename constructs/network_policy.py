"""Network policy of one namespace: a NetworkPolicy that denies everything, and a CiliumNetworkPolicy
that allows the flows given (Cilium's entities say what NetworkPolicy cannot: the API server, the
world outside the cluster, the nodes, the whole cluster)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs import Construct
from constructs.objects import api_object

CILIUM = "cilium.io/v2"
NAMESPACE_KEY = "k8s:io.kubernetes.pod.namespace"
EVERY_NAMESPACE = "*"
# Cilium's entities for the names flows use; `cluster` is every pod and node of the cluster
ENTITIES = {
    "world": ["world"],
    "nodes": ["host", "remote-node"],
    "kube-apiserver": ["kube-apiserver"],
    "cluster": ["cluster"],
}
KUBE_SYSTEM = "kube-system"
DNS = {"matchLabels": {NAMESPACE_KEY: KUBE_SYSTEM, "k8s:k8s-app": "kube-dns"}}
DNS_PORTS = [{"port": "53", "protocol": "ANY"}]
DEFAULT_DENY = "default-deny"
FLOWS = "site-flows"


@dataclass(frozen=True, order=True)
class Peer:
    namespace: str = ""  # a namespace, or EVERY_NAMESPACE
    entity: str = ""  # a key of ENTITIES
    names: tuple[str, ...] = ()  # of the world: these DNS names only (a `*` makes a pattern)
    cidrs: tuple[str, ...] = ()  # of the world: these addresses only (another cluster's service)


def _fqdns(names: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"matchPattern": n} if "*" in n else {"matchName": n} for n in names]


def _ports(ports: set[int]) -> dict[str, Any]:
    return (
        {"toPorts": [{"ports": [{"port": str(p), "protocol": "TCP"} for p in sorted(ports)]}]}
        if ports
        else {}
    )


def _selector(namespace: str) -> dict[str, Any]:
    if namespace == EVERY_NAMESPACE:
        return {"matchExpressions": [{"key": NAMESPACE_KEY, "operator": "Exists"}]}
    return {"matchLabels": {NAMESPACE_KEY: namespace}}


def _rules(peers: Mapping[Peer, set[int]], endpoints: str, entities: str) -> list[dict[str, Any]]:
    rules = []
    for peer in sorted(peers):
        if peer.names:
            rules.append({"toFQDNs": _fqdns(peer.names), **_ports(peers[peer])})
        elif peer.cidrs:  # toCIDR, fromCIDR: addresses outside the cluster
            rules.append({endpoints.replace("Endpoints", "CIDR"): list(peer.cidrs), **_ports(peers[peer])})
        elif peer.entity:
            rules.append({entities: ENTITIES[peer.entity], **_ports(peers[peer])})
        else:
            rules.append({endpoints: [_selector(peer.namespace)], **_ports(peers[peer])})
    return rules


class NamespacePolicy(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        api: bool,
        egress: Mapping[Peer, set[int]],
        ingress: Mapping[Peer, set[int]],
        serves_dns: bool = False,
    ) -> None:
        super().__init__(scope, id)
        api_object(
            self,
            "Deny",
            "networking.k8s.io/v1",
            "NetworkPolicy",
            {"name": DEFAULT_DENY, "namespace": namespace},
            spec={"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        )
        dns: dict[str, Any] = {"ports": DNS_PORTS}
        if any(peer.names for peer in egress):  # Cilium learns the names' addresses from its DNS proxy
            dns["rules"] = {"dns": [{"matchPattern": "*"}]}
        out: list[dict[str, Any]] = [
            {"toEndpoints": [DNS], "toPorts": [dns]},
            {"toEndpoints": [{}]},  # its own namespace
        ]
        if api:
            out.append({"toEntities": ENTITIES["kube-apiserver"]})
        out += _rules(egress, "toEndpoints", "toEntities")
        into: list[dict[str, Any]] = [
            {"fromEndpoints": [{}]},
            *_rules(ingress, "fromEndpoints", "fromEntities"),
        ]
        if serves_dns:
            # The cluster's DNS: asked by every pod and by host-network pods (ClusterFirstWithHostNet);
            # it forwards to the resolvers of the nodes' resolv.conf, outside the cluster or on a node.
            # The rules cover the namespace's pods, not kube-dns alone: Cilium's policies add up per
            # endpoint, and no other pod of kube-system listens on 53.
            into.append({"fromEntities": ENTITIES["cluster"], "toPorts": [{"ports": DNS_PORTS}]})
            out.append(
                {"toEntities": [*ENTITIES["world"], *ENTITIES["nodes"]], "toPorts": [{"ports": DNS_PORTS}]}
            )
        api_object(
            self,
            "Allow",
            CILIUM,
            "CiliumNetworkPolicy",
            {"name": FLOWS, "namespace": namespace},
            spec={"endpointSelector": {}, "ingress": into, "egress": out},
        )
