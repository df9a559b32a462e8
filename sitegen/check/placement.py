"""The placement engine: which pools a pod template (or a chart component in a values file) targets,
which pool taints it tolerates, and which of the cluster's workloads are node agents.

A workload "targets" every pool whose labels satisfy its node selector and required node affinity,
and "tolerates" every pool taint its tolerations match.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sitegen.components.base import EVERY_POOL, NodeAgent
from sitegen.model import PoolLayout, Taint
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

# Labels every node carries (set by the kubelet itself), so selectors on them match every pool.
IMPLICIT_NODE_LABELS = {"kubernetes.io/os": "linux"}
# Labels the GPU Operator puts on nodes with NVIDIA GPUs.
GPU_NODE_LABELS = {"nvidia.com/gpu.present": "true"}

_POD_TEMPLATE_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_PLACEMENT_KEYS = ("nodeSelector", "tolerations", "affinity")


def pod_spec(doc: Document) -> tuple[str, dict[str, Any]] | None:
    """The pod spec of a workload and its JSON path, or None for kinds that run no pods."""
    keys = _POD_TEMPLATE_PATHS.get(doc.kind)
    if keys is None or doc.group not in ("", "apps", "batch"):
        return None
    node: Any = doc.body
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return ("$." + ".".join(keys), node) if isinstance(node, dict) else None


def _at(node: Any, path: str) -> Any:
    """The value at a JSON path of plain keys (`$.spec.daemonsets`), or None."""
    for key in path.removeprefix("$").strip(".").split("."):
        node = node.get(key) if isinstance(node, dict) and key else node if not key else None
    return node


@dataclass(frozen=True)
class Workload:
    """Something the scheduler places: a pod template, or the placement block of a custom resource
    whose operator creates the pods (the GPU Operator's ClusterPolicy), named by a node-agent key."""

    doc: Document
    path: str
    spec: dict[str, Any]  # holds nodeSelector, affinity, tolerations (and containers for pod templates)
    kind: str  # the object's kind, or "CustomResource" for a placement block
    agents: Mapping[str, NodeAgent] = field(default_factory=dict, compare=False)

    @property
    def agent_key(self) -> str:
        ref = f"{self.doc.kind}/{self.doc.namespace}/{self.doc.name}"
        return f"{ref}:{self.path}" if self.kind == "CustomResource" else ref

    @property
    def agent(self) -> NodeAgent | None:
        return self.agents.get(self.agent_key)

    @property
    def placement(self) -> dict[str, Any]:
        """The spec as the scheduler sees it: an agent's implied selector counts when none is set."""
        agent = self.agent
        if agent and agent.implied_selector and not self.spec.get("nodeSelector"):
            return {**self.spec, "nodeSelector": dict(agent.implied_selector)}
        return self.spec

    @property
    def is_service(self) -> bool:
        return self.kind in ("Deployment", "StatefulSet", "ReplicaSet")


def workloads(
    docs: list[Document], agents: Mapping[str, NodeAgent], scheduled_only: bool = True
) -> Iterator[Workload]:
    """Every pod template of `docs` (values files are inputs, not objects), and the placement blocks
    of custom resources that node-agent keys name; without `scheduled_only`, host files' pods too."""
    blocks: dict[str, list[str]] = {}
    for key in agents:
        ref, _, path = key.partition(":")
        if path:
            blocks.setdefault(ref, []).append(path)
    for doc in docs:
        if doc.is_values or (scheduled_only and doc.is_host_file):
            continue
        found = pod_spec(doc)
        if found is not None:
            yield Workload(doc, found[0], found[1], doc.kind, agents)
        for path in blocks.get(f"{doc.kind}/{doc.namespace}/{doc.name}", []):
            block = _at(doc.body, path)
            if isinstance(block, dict):
                yield Workload(doc, path, block, "CustomResource", agents)


HOSTNAME = "kubernetes.io/hostname"


def _term_matches(term: dict[str, Any], labels: dict[str, str], hosts: tuple[str, ...] = ()) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if key == HOSTNAME and op == "In" and hosts:  # a pool holds each of its hosts' names
            if not set(values) & set(hosts):
                return False
            continue
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(op, False)
        if not ok:
            return False
    return not term.get("matchFields")


def targeted_pools(spec: dict[str, Any], pools: tuple[PoolLayout, ...]) -> list[PoolLayout]:
    selector = spec.get("nodeSelector") or {}
    required = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    matched = []
    for pool in pools:
        labels = {**IMPLICIT_NODE_LABELS, **(GPU_NODE_LABELS if pool.hardware.gpu else {}), **pool.labels}
        if all(labels.get(k) == v for k, v in selector.items()) and (
            not terms or any(_term_matches(t, labels, tuple(h.name for h in pool.hosts)) for t in terms)
        ):
            matched.append(pool)
    return matched


def tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    key, op = toleration.get("key", ""), toleration.get("operator", "Equal")
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if not key:
        return op == "Exists"
    if key != taint.key:
        return False
    return op == "Exists" or toleration.get("value", "") == (taint.value or "")


def tolerated_taints(spec: dict[str, Any], pools: tuple[PoolLayout, ...]) -> set[Taint]:
    taints = {t for p in pools for t in p.taints}
    return {t for t in taints if any(tolerates(tol, t) for tol in spec.get("tolerations") or [])}


def taints_of(pools: list[PoolLayout]) -> set[Taint]:
    return {t for p in pools for t in p.taints}


def reached_pools(agent: NodeAgent, pools: tuple[PoolLayout, ...]) -> list[PoolLayout]:
    """The pools of a cluster an agent must reach."""
    return list(pools) if EVERY_POOL in agent.pools else [p for p in pools if p.name in agent.pools]
