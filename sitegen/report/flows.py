"""The flows the network policies allow, per namespace, read back from the rendered
CiliumNetworkPolicies (every site namespace also has a default deny): for review, and the list a
security review asks for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sitegen.report.table import records, table
from sitegen.tree.documents import load_tree

NAMESPACE_LABEL = "k8s:io.kubernetes.pod.namespace"


def _peer(selector: dict[str, Any]) -> str:
    labels = selector.get("matchLabels") or {}
    if not labels:
        return "own namespace"
    if labels.get("k8s:k8s-app") == "kube-dns":
        return "DNS"
    namespace = labels.get(NAMESPACE_LABEL)
    return (
        namespace
        if namespace and len(labels) == 1
        else ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    )


def _ports(rule: dict[str, Any]) -> str:
    ports = sorted({p["port"] for to in rule.get("toPorts") or [] for p in to.get("ports") or []}, key=int)
    return f":{'/'.join(ports)}" if ports and ports != ["53"] else ""


def _side(rules: list[dict[str, Any]], endpoints: str, entities: str) -> list[str]:
    peers = []
    for rule in rules:
        suffix = _ports(rule)
        peers += [_peer(s) + suffix for s in rule.get(endpoints) or []]
        peers += [e + suffix for e in rule.get(entities) or []]
        peers += [c + suffix for c in rule.get(endpoints.replace("Endpoints", "CIDR")) or []]
        peers += [
            (s.get("matchName") or s.get("matchPattern", "")) + suffix for s in rule.get("toFQDNs") or []
        ]
    return sorted(set(peers))


def flow_rows(dist: Path) -> list[list[str]]:
    rows = []
    for doc in load_tree(dist):
        if doc.kind != "CiliumNetworkPolicy" or doc.group != "cilium.io":
            continue
        spec = doc.body.get("spec") or {}
        egress = _side(spec.get("egress") or [], "toEndpoints", "toEntities")
        ingress = _side(spec.get("ingress") or [], "fromEndpoints", "fromEntities")
        rows.append([doc.variant, doc.cluster or "-", doc.namespace, ", ".join(egress), ", ".join(ingress)])
    return sorted(rows)


HEADERS = ["variant", "cluster", "namespace", "egress to", "ingress from"]


def render_flows(dist: Path, *, as_json: bool = False) -> str:
    rows = flow_rows(dist)
    return records(HEADERS, rows) if as_json else "\n".join(table(HEADERS, rows)) + "\n"
