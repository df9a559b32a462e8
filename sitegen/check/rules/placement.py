"""Placement rules: every pod selects one pool, services run on the system pool, dedicated and
control-plane taints are tolerated only where they must be, node agents reach exactly their pools."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath

from constructs.namespaces import TOLERATIONS_WHITELIST
from sitegen.check.bringup.kube import added_by_the_plugin, pod_template
from sitegen.check.placement import reached_pools, taints_of, targeted_pools, tolerated_taints, tolerates
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.tolerations import whitelist_admits
from sitegen.model import PoolLayout, Taint, paths
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


def _names(pools: list[PoolLayout]) -> str:
    return ", ".join(p.name for p in pools) or "none"


def _taint_text(taints: set[Taint]) -> str:
    return ", ".join(sorted(f"{t.key}={t.value or ''}:{t.effect}" for t in taints)) or "none"


@rule("PLC-001", "select-a-pool", "an unplaced pod lands anywhere; a selector spanning pools is ambiguous")
def _select_a_pool(ctx: Context) -> Iterator[Violation]:
    for w in ctx.workloads():
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
    for w in ctx.workloads():
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
    for w in ctx.workloads():
        if w.agent is not None:
            continue  # node agents are judged by PLC-005
        pools = ctx.pools(w.doc)
        targets = targeted_pools(w.placement, pools)
        dedicated = {t for p in pools if not p.is_control_plane for t in p.taints}
        stray = (tolerated_taints(w.placement, pools) & dedicated) - taints_of(targets)
        if stray:
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
                f"tolerates {_taint_text(stray)} without selecting that pool (selects {_names(targets)})",
            )


@rule("PLC-004", "control-plane-taint", "nothing but listed node agents runs beside etcd and the API server")
def _control_plane_taint(ctx: Context) -> Iterator[Violation]:
    for w in ctx.workloads():
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
    yield from _stale_agents(ctx)
    for w in ctx.workloads():
        agent = w.agent
        if w.kind != "DaemonSet" and agent is None:
            continue
        pools = ctx.pools(w.doc)
        targets = targeted_pools(w.placement, pools)
        if agent is not None:
            wanted = reached_pools(agent, pools)
            # a DaemonSet only lands where it tolerates every scheduling taint
            tolerable = tolerated_taints(w.placement, pools)
            targets = [p for p in targets if set(p.taints) <= tolerable]
            if {p.name for p in targets} != {p.name for p in wanted}:
                yield Violation(
                    w.doc, f"{w.path}.nodeSelector", f"reaches {_names(targets)}, must reach {_names(wanted)}"
                )
                continue
        tolerated, needed = tolerated_taints(w.placement, pools), taints_of(targets)
        if tolerated != needed:
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
                f"tolerates {_taint_text(tolerated)}; the pools it reaches ({_names(targets)}) need {_taint_text(needed)}",
            )


def _stale(ctx: Context, declared: Mapping[tuple[str, str], Iterable[str]], what: str) -> Iterator[Violation]:
    """A declaration (by `Kind/namespace/name` key) that matches no rendered workload checks nothing."""
    found = {(w.doc.variant, w.doc.cluster or "", w.agent_key) for w in ctx.workloads()}
    variants = {d.variant for d in ctx.docs}
    for (variant, cluster), keys in sorted(declared.items()):
        if variant not in variants:
            continue
        for key in sorted(keys):
            if (variant, cluster, key) not in found:
                where = Document(PurePosixPath(variant, paths.APPS, cluster), 0, {})
                yield Violation(where, "$", f"{what} {key} is declared but no such object is rendered")


def _stale_agents(ctx: Context) -> Iterator[Violation]:
    yield from _stale(ctx, ctx.allow.agents, "node agent")


@rule(
    "PLC-006",
    "schedulable",
    "a pod that does not tolerate the taints of the pool it selects stays Pending (a certificate Job: for ever)",
)
def _schedulable(ctx: Context) -> Iterator[Violation]:
    for w in ctx.workloads():
        if w.agent is not None or w.kind == "DaemonSet":
            continue  # node agents are judged by PLC-005
        pools = ctx.pools(w.doc)
        tolerated = tolerated_taints(w.placement, pools)
        for pool in targeted_pools(w.placement, pools):
            missing = {t for t in pool.taints if t.effect != "PreferNoSchedule"} - tolerated
            if missing:
                yield Violation(
                    w.doc,
                    f"{w.path}.tolerations",
                    f"selects pool {pool.name} but does not tolerate its {_taint_text(missing)}",
                )


NOT_READY = Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")


@rule(
    "PLC-007",
    "bootstrap-critical",
    "what nodes need before they turn Ready must schedule on NotReady nodes, or no node ever turns Ready",
)
def _bootstrap_critical(ctx: Context) -> Iterator[Violation]:
    yield from _stale(ctx, ctx.allow.bootstrap_critical, "bootstrap-critical")
    for w in ctx.workloads():
        critical = ctx.allow.bootstrap_critical.get((w.doc.variant, w.doc.cluster or ""), {})
        if w.agent_key not in critical:
            continue
        if not any(tolerates(t, NOT_READY) for t in w.placement.get("tolerations") or []):
            yield Violation(
                w.doc,
                f"{w.path}.tolerations",
                f"does not tolerate {NOT_READY.key}:{NOT_READY.effect}, which every node carries until "
                f"this runs ({critical[w.agent_key]})",
            )


@rule(
    "PLC-008",
    "toleration-whitelist",
    "a pod tolerates only what its namespace's tolerationsWhitelist admits: the API server refuses it otherwise",
)
def _toleration_whitelist(ctx: Context) -> Iterator[Violation]:
    allowed: dict[tuple[str, str | None, str], list[dict[str, str]]] = {}
    for doc in ctx.docs:
        if doc.kind == "Namespace" and doc.group == "":
            raw = dig(doc.body, "metadata", "annotations", TOLERATIONS_WHITELIST)
            if raw is not None:
                allowed[(doc.variant, doc.cluster, doc.name)] = json.loads(raw)
    for doc in ctx.docs:
        template = pod_template(doc.body) if doc.namespace else None
        whitelist = allowed.get((doc.variant, doc.cluster, doc.namespace)) if template else None
        if template is None or whitelist is None:
            continue
        own = list(template.spec.get("tolerations") or [])
        for i, toleration in enumerate([*own, *added_by_the_plugin(template.spec)]):
            if not whitelist_admits(whitelist, toleration):
                yield Violation(
                    doc,
                    f"$..tolerations[{i}]" if i < len(own) else "$..tolerations",
                    f"namespace {doc.namespace} admits no toleration {toleration.get('key')}"
                    f"={toleration.get('value', '')}:{toleration.get('effect', '')}"
                    + (
                        ""
                        if i < len(own)
                        else " (PodTolerationRestriction adds it to a pod that is not BestEffort)"
                    ),
                )
