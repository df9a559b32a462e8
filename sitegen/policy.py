"""Policy invariants over the rendered tree: named rules, each with an id and a one-line rationale.

Rules read dist/ as Argo CD would see it, so they keep working as apps arrive. Placement is judged
against the pools of the document's cluster: a workload "targets" every pool whose labels satisfy
its node selector and required node affinity, and "tolerates" every pool taint its tolerations match.
The allow-lists below are the reviewed exceptions; each entry says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from sitegen.appsets import ExpandedApp, ExpandError
from sitegen.layout import ClusterLayout, PoolLayout, VariantLayout
from sitegen.model import EXACT_VERSION, Site, Taint
from sitegen.tree import Document

# --- reviewed allow-lists ----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeAgent:
    pools: frozenset[str]  # pool names the agent must reach; "*" = every pool of the cluster
    why: str
    # Where the chart places the agent by itself, when its values have no node selector.
    implied_selector: dict[str, str] = field(default_factory=dict)


# Node agents: only these may tolerate the control-plane taint, and each must tolerate exactly the
# taints of the pools it reaches. Keys: "Kind/namespace/name" for rendered workloads,
# "values:<app>:<JSON path>" for a component in a chart's values.
NODE_AGENTS: dict[str, NodeAgent] = {
    "values:cilium:$": NodeAgent(frozenset({"*"}), "the CNI agent: no pod networking on a node without it"),
    "values:node-feature-discovery:$.worker": NodeAgent(
        frozenset({"*"}), "hardware labels on every node, GPU and storage nodes included"
    ),
    "values:gpu-operator:$.daemonsets": NodeAgent(
        frozenset({"gpu"}),
        "driver, toolkit, device plugin, GFD, DCGM exporter, MIG manager, validator: GPU nodes only",
        # the operator labels nodes with NVIDIA PCI devices and its operands select that label
        implied_selector={"nvidia.com/gpu.present": "true"},
    ),
    "values:kube-prometheus-stack:$['prometheus-node-exporter']": NodeAgent(
        frozenset({"*"}), "node metrics (InfiniBand ports included) of every node"
    ),
    "values:smartctl-exporter:$": NodeAgent(frozenset({"*"}), "NVMe wear of every node's drives"),
    "values:otel-node:$": NodeAgent(frozenset({"*"}), "container logs of every node"),
}

# Namespaces that may enforce the `privileged` Pod Security level.
PRIVILEGED_NAMESPACES: dict[str, str] = {
    "kube-system": "static control-plane pods (etcd, API server, kube-vip) and the CNI need host access",
    "gpu-operator": "driver container, toolkit and device plugin load kernel modules and run privileged",
    "nvidia-network-operator": "RDMA device plugin, Multus and CNI installers write to the host",
    "node-feature-discovery": "the worker reads host paths (/sys, /proc, /etc/os-release)",
    "aistor-volume-manager": "the CSI node server formats and mounts the AIStor drives",
    "isilon": "the PowerScale CSI node plugin mounts NFS for the kubelet",
    "topolvm-system": "lvmd manages the LVM volume group of the local NVMe cache",
    "monitoring": "node-exporter shares the host's network and PID namespaces, smartctl reads the NVMe "
    "devices, the log collector reads /var/log/pods",
}


def site_agents(site: Site) -> dict[str, NodeAgent]:
    """Node agents whose pools come from config, added to NODE_AGENTS."""
    storage = site.storage
    cache = frozenset(storage.local_cache.pools)
    return {
        "values:powerscale-csi:$.node": NodeAgent(
            frozenset(storage.powerscale.mount_pools),
            "PowerScale CSI node plugin on the pools that mount NFS",
        ),
        "values:topolvm:$.node": NodeAgent(cache, "TopoLVM node plugin on the local-cache pools"),
        "values:topolvm:$.lvmd": NodeAgent(cache, "lvmd on the local-cache pools"),
    }


# "Kind/namespace/name" of workloads exempt from the restricted security context.
PRIVILEGED_AGENTS: dict[str, str] = {
    "Pod/kube-system/kube-vip": "ARP and IPVS for the API VIP need host networking and NET_ADMIN/NET_RAW",
}

PARTIAL = "sitegen.io/partial"

# Labels every node carries (set by the kubelet itself), so selectors on them match every pool.
IMPLICIT_NODE_LABELS = {"kubernetes.io/os": "linux"}
# Labels the GPU Operator puts on nodes with NVIDIA GPUs.
GPU_NODE_LABELS = {"nvidia.com/gpu.present": "true"}

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
    root: Path = Path("dist")
    apps: list[ExpandedApp] = field(default_factory=list)
    expand_errors: list[tuple[Document, ExpandError]] = field(default_factory=list)
    agents: dict[str, NodeAgent] = field(default_factory=lambda: dict(NODE_AGENTS))

    def cluster(self, doc: Document) -> ClusterLayout | None:
        layout = self.layouts.get(doc.variant)
        if layout is None or doc.cluster is None:
            return None
        return next((c for c in layout.clusters if c.name == doc.cluster), None)

    def pools(self, doc: Document) -> tuple[PoolLayout, ...]:
        cluster = self.cluster(doc)
        return cluster.pools if cluster else ()


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


@dataclass(frozen=True)
class Workload:
    """Something the scheduler places: a pod template of a manifest, or a component of a chart's values."""

    doc: Document
    path: str
    spec: dict[str, Any]  # holds nodeSelector, affinity, tolerations (and containers for manifests)
    kind: str  # manifest kind, or "HelmComponent"
    agents: dict[str, NodeAgent] = field(default_factory=dict, compare=False)

    @property
    def agent_key(self) -> str:
        if self.kind == "HelmComponent":
            return f"values:{PurePosixPath(self.doc.file).stem}:{self.path}"
        return f"{self.doc.kind}/{self.doc.namespace}/{self.doc.name}"

    @property
    def agent(self) -> NodeAgent | None:
        return self.agents.get(self.agent_key)

    @property
    def placement(self) -> dict[str, Any]:
        """The spec as the scheduler sees it: an agent's implied selector counts when none is set."""
        agent = self.agent
        if agent and agent.implied_selector and not self.spec.get("nodeSelector"):
            return {**self.spec, "nodeSelector": agent.implied_selector}
        return self.spec

    @property
    def is_service(self) -> bool:
        return self.kind in ("Deployment", "StatefulSet", "ReplicaSet") or (
            self.kind == "HelmComponent" and not self.agent
        )


_PLACEMENT_KEYS = ("nodeSelector", "tolerations", "affinity")


def _values_components(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping of a values file that carries placement keys: one chart component each."""
    if isinstance(node, dict):
        if any(k in node for k in _PLACEMENT_KEYS) and all(
            isinstance(node.get(k), dict | list) for k in _PLACEMENT_KEYS if k in node
        ):
            yield path, node
        for key, value in node.items():
            yield from _values_components(
                value, f"{path}.{key}" if re.fullmatch(r"[A-Za-z0-9_]+", key) else f"{path}['{key}']"
            )


def _workloads(ctx: Context, scheduled_only: bool = True) -> Iterator[Workload]:
    for doc in ctx.docs:
        if doc.is_values:
            if scheduled_only:
                for path, spec in _values_components(doc.body, "$"):
                    yield Workload(doc, path, spec, "HelmComponent", ctx.agents)
            continue
        if scheduled_only and doc.is_host_file:
            continue
        found = pod_spec(doc)
        if found is not None:
            yield Workload(doc, found[0], found[1], doc.kind, ctx.agents)


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
    matched = []
    for pool in pools:
        labels = {**IMPLICIT_NODE_LABELS, **(GPU_NODE_LABELS if pool.hardware.gpu else {}), **pool.labels}
        if all(labels.get(k) == v for k, v in selector.items()) and (
            not terms or any(_term_matches(t, labels) for t in terms)
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


def _taints_of(pools: list[PoolLayout]) -> set[Taint]:
    return {t for p in pools for t in p.taints}


def _names(pools: list[PoolLayout]) -> str:
    return ", ".join(p.name for p in pools) or "none"


def _taint_text(taints: set[Taint]) -> str:
    return ", ".join(sorted(f"{t.key}={t.value or ''}:{t.effect}" for t in taints)) or "none"


# --- placement ---------------------------------------------------------------------------------


@rule("PLC-001", "select-a-pool", "an unplaced pod lands anywhere; a selector spanning pools is ambiguous")
def _select_a_pool(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx):
        targets = targeted_pools(w.placement, ctx.pools(w.doc))
        if not targets:
            yield Violation(w.doc, f"{w.path}.nodeSelector", "selects no pool of its cluster")
        elif w.kind != "DaemonSet" and w.agent is None and len(targets) != 1:
            yield Violation(w.doc, f"{w.path}.nodeSelector", f"selects several pools ({_names(targets)})")


@rule(
    "PLC-002",
    "services-on-infra",
    "cluster services run on the infra pool, never on compute or control-plane",
)
def _services_on_infra(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx):
        cluster = ctx.cluster(w.doc)
        if not w.is_service or cluster is None:
            continue
        for pool in targeted_pools(w.placement, cluster.pools):
            dedicated = pool.taints and not pool.is_control_plane
            if pool.name != cluster.system_pool.name and not dedicated:
                yield Violation(
                    w.doc,
                    f"{w.path}.nodeSelector",
                    f"a service on pool {pool.name}; services select {cluster.system_pool.name}",
                )


@rule(
    "PLC-003",
    "dedicated-taints",
    "only GPU workloads tolerate dedicated=gpu, only AIStor workloads dedicated=aistor",
)
def _dedicated_taints(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx):
        if w.agent is not None:
            continue  # node agents are judged by PLC-005
        pools = ctx.pools(w.doc)
        targets = targeted_pools(w.placement, pools)
        dedicated = {t for p in pools if not p.is_control_plane for t in p.taints}
        stray = (tolerated_taints(w.placement, pools) & dedicated) - _taints_of(targets)
        if stray:
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
                f"tolerates {_taint_text(stray)} without selecting that pool (selects {_names(targets)})",
            )


@rule("PLC-004", "control-plane-taint", "nothing but listed node agents runs beside etcd and the API server")
def _control_plane_taint(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx):
        cluster = ctx.cluster(w.doc)
        if cluster is None or w.agent is not None:
            continue
        cp_taints = set(cluster.control_plane.taints)
        # A cluster without an infra pool runs its services on its control plane (see ClusterLayout).
        on_system_cp = cluster.system_pool.is_control_plane and targeted_pools(
            w.placement, cluster.pools
        ) == [cluster.control_plane]
        if tolerated_taints(w.placement, cluster.pools) & cp_taints and not on_system_cp:
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
                "tolerates the control-plane taint but is no listed node agent",
            )


@rule("PLC-005", "agents-reach", "a node agent tolerates exactly the taints of the pools it must reach")
def _agents_reach(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx):
        agent = w.agent
        if w.kind != "DaemonSet" and agent is None:
            continue
        pools = ctx.pools(w.doc)
        targets = targeted_pools(w.placement, pools)
        if agent is not None:
            wanted = list(pools) if "*" in agent.pools else [p for p in pools if p.name in agent.pools]
            # a DaemonSet only lands where it tolerates every scheduling taint
            tolerable = tolerated_taints(w.placement, pools)
            targets = [p for p in targets if set(p.taints) <= tolerable]
            if {p.name for p in targets} != {p.name for p in wanted}:
                yield Violation(
                    w.doc, f"{w.path}.nodeSelector", f"reaches {_names(targets)}, must reach {_names(wanted)}"
                )
                continue
        tolerated, needed = tolerated_taints(w.placement, pools), _taints_of(targets)
        if tolerated != needed:
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
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
            for key in ("data", "stringData"):
                if doc.body.get(key):
                    yield Violation(doc, f"$.{key}", "a Secret with values in git")


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_partial(doc: Document) -> bool:
    """A partial object patches a few fields into a workload another owner defines (kubeadm's CoreDNS)."""
    return ((doc.body.get("metadata") or {}).get("annotations") or {}).get(PARTIAL) == "true"


def image_is_pinned(image: str) -> bool:
    if _DIGEST.search(image):
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


def _containers(path: str, spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            yield f"{path}.{key}[{i}]", container


@rule("PIN-001", "pinned-images", "an unpinned image changes under a running site without a commit")
def _pinned_images(ctx: Context) -> Iterator[Violation]:
    for w in _workloads(ctx, scheduled_only=False):
        if is_partial(w.doc):
            continue
        for cpath, container in _containers(w.path, w.spec):
            image = container.get("image") or ""
            if not image_is_pinned(image):
                yield Violation(
                    w.doc, f"{cpath}.image", f"image {image!r} is not pinned to a version tag or digest"
                )


def _values_images(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Images a values file sets: `{repository, tag}` mappings and `image: <ref>` strings."""
    if isinstance(node, dict):
        if isinstance(node.get("repository"), str) and "tag" in node:
            yield path, f"{node['repository']}:{node['tag']}"
        if isinstance(node.get("image"), str):
            # NVIDIA's operators split an image into repository, image (the name) and version
            if "version" in node:
                yield path, f"{node.get('repository', '')}/{node['image']}:{node['version']}"
            else:
                yield f"{path}.image", node["image"]
        for key, value in node.items():
            yield from _values_images(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _values_images(value, f"{path}[{i}]")


@rule(
    "PIN-003",
    "pinned-chart-images",
    "an image a values file sets replaces the chart's pinned default: it must be pinned too",
)
def _pinned_values_images(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if not doc.is_values:
            continue
        for path, image in _values_images(doc.body, "$"):
            if not image_is_pinned(image):
                yield Violation(doc, path, f"image {image!r} is not pinned to a version tag or digest")


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
    for app in ctx.apps:
        for i, source in enumerate(app.sources):
            if "chart" not in source:
                continue
            revision = str(source.get("targetRevision", ""))
            if not EXACT_VERSION.match(revision):
                yield Violation(
                    app.source,
                    f"{app.element_path} -> {app.name}.sources[{i}].targetRevision",
                    f"chart {source['chart']} at {revision!r}, not an exact version",
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
    for w in _workloads(ctx, scheduled_only=False):
        if w.agent_key in PRIVILEGED_AGENTS or is_partial(w.doc):
            continue
        for cpath, container in _containers(w.path, w.spec):
            problems = _restricted_problems(w.spec, container)
            if problems:
                yield Violation(w.doc, cpath, "; ".join(problems))


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


# --- Applications: what the ApplicationSets expand to ------------------------------------------

REPO_DIST = "dist/"  # Argo CD paths are repository paths; dist/ sits at the repository root


def _tree_path(ctx: Context, repo_path: str) -> Path | None:
    return ctx.root / repo_path.removeprefix(REPO_DIST) if repo_path.startswith(REPO_DIST) else None


def _at(app: ExpandedApp, detail: str) -> str:
    return f"{app.element_path} -> {app.name}{detail}"


@rule("APP-000", "appsets-expand", "an ApplicationSet that cannot be expanded offline cannot be reviewed")
def _appsets_expand(ctx: Context) -> Iterator[Violation]:
    for doc, error in ctx.expand_errors:
        yield Violation(doc, error.path, error.message)


@rule(
    "APP-001",
    "source-paths",
    "an Application pointing at a missing folder syncs nothing, or prunes everything",
)
def _source_paths(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        for i, source in enumerate(app.sources):
            if "path" not in source:
                continue
            folder = _tree_path(ctx, str(source["path"]))
            if folder is None or not folder.is_dir() or not any(folder.rglob("*.yaml")):
                yield Violation(
                    app.source, _at(app, f".sources[{i}].path"), f"{source['path']} holds no YAML"
                )


@rule("APP-002", "values-files", "a missing $values file silently installs a chart with its defaults")
def _values_files(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        refs = {s.get("ref") for s in app.sources if s.get("ref")}
        for i, source in enumerate(app.sources):
            for j, value_file in enumerate(((source.get("helm") or {}).get("valueFiles")) or []):
                where = _at(app, f".sources[{i}].helm.valueFiles[{j}]")
                ref, _, rest = str(value_file).partition("/")
                if not ref.startswith("$") or ref[1:] not in refs:
                    yield Violation(app.source, where, f"{value_file} names no `ref` source")
                    continue
                target = _tree_path(ctx, rest)
                if target is None or not target.is_file():
                    yield Violation(app.source, where, f"{rest} does not exist")


@rule(
    "APP-003",
    "destinations",
    "an Application for an undeclared cluster deploys nowhere or somewhere unintended",
)
def _destinations(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        layout = ctx.layouts.get(app.source.variant)
        servers = {layout.server(c) for c in layout.clusters} if layout else set()
        server, _ = app.destination
        if server not in servers:
            yield Violation(
                app.source, _at(app, ".destination.server"), f"{server} is no cluster of this variant"
            )


def _projects(ctx: Context, variant: str) -> dict[str, dict[str, Any]]:
    return {
        d.name: d.body.get("spec") or {}
        for d in ctx.docs
        if d.variant == variant and d.group == "argoproj.io" and d.kind == "AppProject"
    }


def _matches(entries: list[dict[str, Any]], group: str, kind: str) -> bool:
    return any(
        fnmatchcase(group, e.get("group", "")) and fnmatchcase(kind, e.get("kind", "")) for e in entries
    )


def _rendered_under(ctx: Context, app: ExpandedApp) -> Iterator[Document]:
    for source in app.sources:
        folder = _tree_path(ctx, str(source.get("path", ""))) if "path" in source else None
        if folder is None:
            continue
        prefix = PurePosixPath(folder.relative_to(ctx.root).as_posix())
        yield from (d for d in ctx.docs if d.file.is_relative_to(prefix))


@rule(
    "APP-004",
    "project-admits",
    "every Application stays inside its project: repositories, destinations, kinds",
)
def _project_admits(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        project = _projects(ctx, app.source.variant).get(app.project)
        if project is None:
            yield Violation(app.source, _at(app, ".project"), f"project {app.project!r} is not declared")
            continue
        for i, source in enumerate(app.sources):
            repo = str(source.get("repoURL", ""))
            if not any(
                fnmatchcase(repo, p) for p in project.get("sourceRepos") or [] if not p.startswith("!")
            ):
                yield Violation(
                    app.source,
                    _at(app, f".sources[{i}].repoURL"),
                    f"{repo} not in {app.project}'s sourceRepos",
                )
        server, namespace = app.destination
        if not any(
            fnmatchcase(server, d.get("server", "")) and fnmatchcase(namespace, d.get("namespace", ""))
            for d in project.get("destinations") or []
        ):
            yield Violation(
                app.source,
                _at(app, ".destination"),
                f"{server} {namespace} not in {app.project}'s destinations",
            )
        refused: dict[tuple[str, str], list[Document]] = {}
        destinations = project.get("destinations") or []
        for doc in _rendered_under(ctx, app):
            if doc.namespace and not any(
                fnmatchcase(server, d.get("server", ""))
                and fnmatchcase(doc.namespace, d.get("namespace", ""))
                for d in destinations
            ):
                yield Violation(
                    doc,
                    "$.metadata.namespace",
                    f"namespace {doc.namespace} not in {app.project}'s destinations",
                )
            if not doc.namespace:
                ok = _matches(project.get("clusterResourceWhitelist") or [], doc.group, doc.kind)
            else:
                allowed = project.get("namespaceResourceWhitelist")
                denied = project.get("namespaceResourceBlacklist") or []
                ok = (allowed is None or _matches(allowed, doc.group, doc.kind)) and not _matches(
                    denied, doc.group, doc.kind
                )
            if not ok:
                refused.setdefault((doc.group, doc.kind), []).append(doc)
        for (group, kind), docs in sorted(refused.items()):
            scope = "namespaced" if docs[0].namespace else "cluster-scoped"
            yield Violation(
                app.source,
                _at(app, ".project"),
                f"{app.project} does not admit {scope} {group or 'core'}/{kind} "
                f"({len(docs)} objects, e.g. {docs[0].file})",
            )


def run_rules(ctx: Context) -> Iterator[tuple[Rule, Violation]]:
    for r in RULES:
        for violation in r.check(ctx):
            yield r, violation
