"""Policy invariants over the rendered tree: named rules, each with an id and a one-line rationale.

Rules read dist/ as Argo CD would see it, so they keep working as apps arrive. Placement is judged
against the pools of the document's cluster: a workload "targets" every pool whose labels satisfy
its node selector and required node affinity, and "tolerates" every pool taint its tolerations match.
The allow-lists below are the reviewed exceptions; each entry says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sitegen.layout import PoolLayout, VariantLayout
from sitegen.model import EXACT_VERSION, Taint
from sitegen.tree import Document

# --- reviewed allow-lists ----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeAgent:
    pools: frozenset[str]  # pool names the agent must reach; "*" = every pool of the cluster
    why: str


# (kind, namespace, name) -> the pools a node agent must reach. Only these may tolerate the
# control-plane taint, and each must tolerate exactly the taints of its pools.
NODE_AGENTS: dict[tuple[str, str, str], NodeAgent] = {}

# Namespaces that may enforce the `privileged` Pod Security level.
PRIVILEGED_NAMESPACES: dict[str, str] = {
    "kube-system": "static control-plane pods (etcd, API server, kube-vip) need host access",
}

# (kind, namespace, name) of workloads exempt from the restricted security context.
PRIVILEGED_AGENTS: dict[tuple[str, str, str], str] = {
    (
        "Pod",
        "kube-system",
        "kube-vip",
    ): "ARP and IPVS for the API VIP need host networking and NET_ADMIN/NET_RAW",
}

# --- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    doc: Document
    path: str
    message: str


@dataclass(frozen=True)
class Context:
    docs: list[Document]
    layouts: dict[str, VariantLayout]

    def pools(self, doc: Document) -> tuple[PoolLayout, ...]:
        layout = self.layouts.get(doc.variant)
        if layout is None or doc.cluster is None:
            return ()
        return next((c.pools for c in layout.clusters if c.name == doc.cluster), ())


Check = Callable[[Context], Iterator[Violation]]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    rationale: str
    check: Check


RULES: list[Rule] = []


def rule(id: str, name: str, rationale: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        RULES.append(Rule(id, name, rationale, check))
        return check

    return register


# --- pod helpers -------------------------------------------------------------------------------

_POD_TEMPLATE_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def pod_spec(doc: Document) -> tuple[str, dict[str, Any]] | None:
    """The pod spec of a workload and its JSON path, or None for kinds that run no pods."""
    keys = _POD_TEMPLATE_PATHS.get(doc.kind)
    if keys is None or doc.group not in ("", "apps", "batch"):
        return None
    node: Any = doc.body
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return ("$." + ".".join(keys), node) if isinstance(node, dict) else None


def _workloads(ctx: Context, scheduled_only: bool = True) -> Iterator[tuple[Document, str, dict[str, Any]]]:
    for doc in ctx.docs:
        if doc.is_values or (scheduled_only and doc.is_host_file):
            continue
        found = pod_spec(doc)
        if found is not None:
            yield doc, found[0], found[1]


def _term_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
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
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return [
        p
        for p in pools
        if all(p.labels.get(k) == v for k, v in selector.items())
        and (not terms or any(_term_matches(t, p.labels) for t in terms))
    ]


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


def _taints_of(pools: list[PoolLayout]) -> set[Taint]:
    return {t for p in pools for t in p.taints}


def _names(pools: list[PoolLayout]) -> str:
    return ", ".join(p.name for p in pools) or "none"


def _taint_text(taints: set[Taint]) -> str:
    return ", ".join(sorted(f"{t.key}={t.value or ''}:{t.effect}" for t in taints)) or "none"


def _agent(doc: Document) -> NodeAgent | None:
    return NODE_AGENTS.get((doc.kind, doc.namespace, doc.name))


# --- placement ---------------------------------------------------------------------------------


@rule("PLC-001", "select-a-pool", "an unplaced pod lands anywhere; a selector spanning pools is ambiguous")
def _select_a_pool(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx):
        pools = ctx.pools(doc)
        targets = targeted_pools(spec, pools)
        if not targets:
            yield Violation(doc, f"{path}.nodeSelector", "selects no pool of its cluster")
        elif doc.kind != "DaemonSet" and len(targets) != 1:
            yield Violation(doc, f"{path}.nodeSelector", f"selects several pools ({_names(targets)})")


@rule(
    "PLC-002",
    "services-on-infra",
    "cluster services run on the infra pool, never on compute or control-plane",
)
def _services_on_infra(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx):
        if doc.kind not in ("Deployment", "StatefulSet", "ReplicaSet"):
            continue
        targets = targeted_pools(spec, ctx.pools(doc))
        for pool in targets:
            dedicated = pool.taints and not pool.is_control_plane
            if pool.role != "infra" and not dedicated:
                yield Violation(
                    doc, f"{path}.nodeSelector", f"a service on pool {pool.name}; services select infra"
                )


@rule(
    "PLC-003",
    "dedicated-taints",
    "only GPU workloads tolerate dedicated=gpu, only AIStor workloads dedicated=aistor",
)
def _dedicated_taints(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx):
        pools = ctx.pools(doc)
        if _agent(doc) is not None:
            continue  # node agents are judged by PLC-005
        targets = targeted_pools(spec, pools)
        dedicated = {t for p in pools if not p.is_control_plane for t in p.taints}
        stray = (tolerated_taints(spec, pools) & dedicated) - _taints_of(targets)
        if stray:
            yield Violation(
                doc,
                f"{path}.tolerations",
                f"tolerates {_taint_text(stray)} without selecting that pool (selects {_names(targets)})",
            )


@rule("PLC-004", "control-plane-taint", "nothing but listed node agents runs beside etcd and the API server")
def _control_plane_taint(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx):
        pools = ctx.pools(doc)
        cp_taints = {t for p in pools if p.is_control_plane for t in p.taints}
        if tolerated_taints(spec, pools) & cp_taints and _agent(doc) is None:
            yield Violation(
                doc, f"{path}.tolerations", "tolerates the control-plane taint but is no listed node agent"
            )


@rule("PLC-005", "agents-reach", "a node agent tolerates exactly the taints of the pools it must reach")
def _agents_reach(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx):
        agent = _agent(doc)
        if doc.kind != "DaemonSet" and agent is None:
            continue
        pools = ctx.pools(doc)
        targets = targeted_pools(spec, pools)
        if agent is not None:
            wanted = list(pools) if "*" in agent.pools else [p for p in pools if p.name in agent.pools]
            if {p.name for p in targets} != {p.name for p in wanted}:
                yield Violation(
                    doc, f"{path}.nodeSelector", f"reaches {_names(targets)}, must reach {_names(wanted)}"
                )
                continue
        tolerated, needed = tolerated_taints(spec, pools), _taints_of(targets)
        if tolerated != needed:
            yield Violation(
                doc,
                f"{path}.tolerations",
                f"tolerates {_taint_text(tolerated)}; the pools it reaches ({_names(targets)}) need {_taint_text(needed)}",
            )


# --- pod security ------------------------------------------------------------------------------

_PSA = "pod-security.kubernetes.io/"
_LEVELS = ("privileged", "baseline", "restricted")


@rule("PSA-001", "namespace-psa-labels", "an unlabelled namespace falls back to the cluster default level")
def _namespace_labels(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind != "Namespace" or doc.group != "":
            continue
        labels = (doc.body.get("metadata") or {}).get("labels") or {}
        for mode in ("enforce", "audit", "warn"):
            if labels.get(_PSA + mode) not in _LEVELS:
                yield Violation(
                    doc, f"$.metadata.labels['{_PSA}{mode}']", f"missing or invalid Pod Security {mode}"
                )


@rule(
    "PSA-002",
    "privileged-namespaces",
    "privileged is granted per namespace, only to reviewed node-level agents",
)
def _privileged_namespaces(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind != "Namespace" or doc.group != "":
            continue
        labels = (doc.body.get("metadata") or {}).get("labels") or {}
        if labels.get(_PSA + "enforce") == "privileged" and doc.name not in PRIVILEGED_NAMESPACES:
            yield Violation(
                doc, f"$.metadata.labels['{_PSA}enforce']", "privileged, but not on the privileged list"
            )


# --- secrets, pins, security context, names ----------------------------------------------------


@rule(
    "SEC-001",
    "no-secret-data",
    "secret values never enter git; reference them (ExternalSecret, existing secrets)",
)
def _no_secret_data(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind == "Secret" and doc.group == "":
            for field in ("data", "stringData"):
                if doc.body.get(field):
                    yield Violation(doc, f"$.{field}", "a Secret with values in git")


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_is_pinned(image: str) -> bool:
    if _DIGEST.search(image):
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


def _containers(path: str, spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            yield f"{path}.{field}[{i}]", container


@rule("PIN-001", "pinned-images", "an unpinned image changes under a running site without a commit")
def _pinned_images(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx, scheduled_only=False):
        for cpath, container in _containers(path, spec):
            image = container.get("image") or ""
            if not image_is_pinned(image):
                yield Violation(
                    doc, f"{cpath}.image", f"image {image!r} is not pinned to a version tag or digest"
                )


def _helm_sources(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if "chart" in node and "repoURL" in node:
            yield path, node
        for key, value in node.items():
            yield from _helm_sources(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _helm_sources(value, f"{path}[{i}]")


@rule("PIN-002", "pinned-charts", "a chart range or 'latest' upgrades the site behind the reviewers' backs")
def _pinned_charts(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.group != "argoproj.io" or doc.kind not in ("Application", "ApplicationSet"):
            continue
        for path, source in _helm_sources(doc.body.get("spec"), "$.spec"):
            revision = str(source.get("targetRevision", ""))
            if not EXACT_VERSION.match(revision):
                yield Violation(
                    doc, f"{path}.targetRevision", f"chart {source['chart']} at {revision!r}, not exact"
                )


def _restricted_problems(spec: dict[str, Any], container: dict[str, Any]) -> list[str]:
    pod_ctx, ctx = spec.get("securityContext") or {}, container.get("securityContext") or {}
    problems = []
    requests = (container.get("resources") or {}).get("requests") or {}
    if not {"cpu", "memory"} <= set(requests):
        problems.append("resources.requests needs cpu and memory")
    if ctx.get("privileged"):
        problems.append("privileged")
    if ctx.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation must be false")
    if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
        problems.append("runAsNonRoot must be true")
    if "ALL" not in ((ctx.get("capabilities") or {}).get("drop") or []):
        problems.append("capabilities must drop ALL")
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        problems.append("seccompProfile must be RuntimeDefault")
    return problems


@rule(
    "SEC-002", "restricted-workloads", "our workloads state their resources and run restricted unless listed"
)
def _restricted_workloads(ctx: Context) -> Iterator[Violation]:
    for doc, path, spec in _workloads(ctx, scheduled_only=False):
        if (doc.kind, doc.namespace, doc.name) in PRIVILEGED_AGENTS:
            continue
        for cpath, container in _containers(path, spec):
            problems = _restricted_problems(spec, container)
            if problems:
                yield Violation(doc, cpath, "; ".join(problems))


@rule(
    "UNQ-001",
    "unique-names",
    "two objects of one kind and name in a cluster overwrite each other when synced",
)
def _unique_names(ctx: Context) -> Iterator[Violation]:
    seen: dict[tuple[str, str, str, str, str, str], Document] = {}
    for doc in ctx.docs:
        if doc.is_host_file or doc.is_values or doc.cluster is None:
            continue
        key = (doc.variant, doc.cluster, doc.group, doc.kind, doc.namespace, doc.name)
        if key in seen:
            yield Violation(doc, "$.metadata.name", f"also defined in {seen[key].file}")
        else:
            seen[key] = doc


def run_rules(ctx: Context) -> Iterator[tuple[Rule, Violation]]:
    for r in RULES:
        for violation in r.check(ctx):
            yield r, violation
