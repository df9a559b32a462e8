"""Day 2 on the running model, once the first install is up: the RUNBOOK's Kubernetes upgrade, replayed
batch by batch, and a node going down while a change to git lands.

- The upgrade: every `kubeadm upgrade` of the RUNBOOK must carry `--patches` with the directory the
  nodes joined with (kubeadm keeps no node's patches in the cluster: without the flag etcd's manifest
  and the kubelet's configuration are written without them). The batches the RUNBOOK names must stay
  inside the model's maintenance budgets. Each batch is drained as `kubectl drain` does it (cordoned:
  the unschedulable taint; DaemonSets stay; other pods are evicted and created again where they fit;
  a pod bound to a node-local volume waits for its node), and every workload that ran before must run
  again elsewhere or be one of those, within the budget; then the batch comes back.
- A node down for an hour (a GPU node rebooting for its driver) while the last wave's Application
  changes: its ApplicationSet's rollout (rollout.py) must sync it whatever the DaemonSet apps on that
  node report; and while the ApplicationSet itself changes: the root syncs again, as gitops-engine
  does (argo.py resync), and must apply it whatever the foundation's apps on that node report.
- An ordered chart bump: a chart's app gains a CRD and, in the same commit, another app its first
  object of that kind; the RollingSync must sync them in its steps' order.
- A whole-node job (the acceptance run) submitted while a node of its pool is down: Kueue admits it
  by quota and, with waitForPodsReady, evicts and requeues it when its pods do not all fit, instead of
  letting it hold the other nodes; it runs once the node is back.
- Removals: an object removed from a generated app stays (the rollout's syncs do not prune), keeps
  the app OutOfSync and its step waiting, until the RUNBOOK's prune by hand; an app removed (its
  element gone) takes its objects with it through the resources finalizer, or the scenario names
  what stays behind.

Not modelled: the upgrade's own effects (API deprecations, new defaults), version skew, the time a
batch takes, the node's return after an hour (the scenario ends when the change is applied or stuck).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from constructs import gpu_node_guard as guard
from constructs.objects import pod_account
from sitegen.check.bringup.argo import HEALTHY, AppSync
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.kube import NOT_READY, Taint
from sitegen.check.bringup.objects import key_of, show
from sitegen.check.bringup.runbook import commands
from sitegen.check.netpol import End
from sitegen.compose import paths
from sitegen.model.maintenance import Budget

if TYPE_CHECKING:
    from sitegen.check.bringup.rollout import Rollout
    from sitegen.check.bringup.simulate import Simulation

UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")  # what a cordon adds
GPU = "nvidia.com/gpu"
XID_REASON = "gpu-fatal-xid"  # the guard's label value for a fatal Xid (constructs/monitoring.py)
NODE_LOCAL = {"directpv-min-io", "topolvm-provisioner"}  # claims that tie a pod to its node
_UPGRADE = re.compile(r"^### Upgrading Kubernetes.*?(?=^### )", re.S | re.M)
_POOL_BATCH = re.compile(r"^  - pool `([\w-]+)` \((\d+) nodes\): (\d+) at a time", re.M)
_CLUSTER = re.compile(r"^- `([\w-]+)`: control plane", re.M)


def replay(sim: Simulation, budgets: dict[str, dict[str, Budget]]) -> None:
    """The day-2 scenarios; `budgets` per cluster, by pool (AIStor's server pools as `pool/pool-N`)."""
    _upgrade(sim, budgets)
    ordered_chart_bump(sim)
    an_object_removed(sim)
    an_app_removed(sim)
    gang_job_with_a_node_down(sim)
    a_gpu_breaks(sim)
    _node_down_while_a_change_lands(sim)  # last: the node does not come back


# --- the Kubernetes upgrade ------------------------------------------------------------------------


def _upgrade(sim: Simulation, budgets: dict[str, dict[str, Budget]]) -> None:
    sim.step = "day 2: Kubernetes upgrade"
    runbook = sim.texts[paths.bootstrap_dir(sim.variant) / paths.RUNBOOK]
    section = _UPGRADE.search(runbook)
    if section is None:
        raise Stop(Blocker("-", sim.step, "RUNBOOK.md", "no Kubernetes upgrade procedure"))
    for words, _ in commands(section.group(0)):
        if words[:2] != ["kubeadm", "upgrade"] or words[2:3] not in (["apply"], ["node"]):
            continue
        given = words[words.index("--patches") + 1] if "--patches" in words else None
        for cluster, dirs in sorted(sim.patch_dirs.items()):
            if given not in dirs:
                raise Stop(Blocker(
                    cluster, sim.step, f"kubeadm upgrade {words[2]}",
                    f"runs {'without --patches' if given is None else f'with --patches {given}'}: the nodes "
                    f"joined with the patches in {', '.join(sorted(dirs))} (etcd's metrics address, the "
                    "pool's kubelet reservations), which kubeadm keeps nowhere else: the upgrade drops them",
                ))  # fmt: skip
    if not any(w[:3] == ["kubeadm", "upgrade", "node"] for w, _ in commands(section.group(0))):
        raise Stop(
            Blocker("-", sim.step, "kubeadm upgrade node", "never run: no node but the first is upgraded")
        )
    blocks = re.split(r"(?=^- `)", section.group(0), flags=re.M)
    for block in blocks:
        named = _CLUSTER.match(block)
        if named is None:
            continue
        cluster = sim.clusters[named.group(1)]
        control_plane = next(
            n.pool for n in cluster.nodes.values() if "node-role.kubernetes.io/control-plane" in n.labels
        )
        _drain_pool(sim, cluster, control_plane, 1, budgets.get(cluster.name, {}))  # "one at a time"
        for pool, _, size in _POOL_BATCH.findall(block):
            _drain_pool(sim, cluster, pool, int(size), budgets.get(cluster.name, {}))


def _drain_pool(sim: Simulation, cluster: Cluster, pool: str, size: int, budgets: dict[str, Budget]) -> None:
    allowed = [b for name, b in budgets.items() if name == pool or name.startswith(f"{pool}/")]
    for budget in allowed:
        if size > budget.down:
            raise Stop(Blocker(
                cluster.name, sim.step, f"pool {pool}",
                f"the runbook upgrades {size} at a time; the budget of {budget.pool} is {budget.down} "
                f"({budget.why})",
            ))  # fmt: skip
    hosts = sorted(n for n, node in cluster.nodes.items() if node.pool == pool)
    for start in range(0, len(hosts), size):
        batch = hosts[start : start + size]
        running = [w for w in cluster.workloads.values() if w.running]
        waiting = _drain(cluster, batch, sim.rails[cluster.name])
        stranded = [w for w in running if not w.running and w.template.ref not in waiting]
        if stranded:
            w = stranded[0]
            raise Stop(Blocker(
                cluster.name, sim.step, w.owner,
                f"draining {', '.join(batch)} leaves {w.template.ref} without a place: {w.reason}",
            ))  # fmt: skip
        note = f"; waiting for their nodes: {', '.join(sorted(waiting))}" if waiting else ""
        sim.result.timeline.append(
            _event(cluster.name, sim.step, f"pool {pool}: {', '.join(batch)} drained, upgraded, back{note}")
        )
        _uncordon(cluster, batch, sim.rails[cluster.name])


def _drain(cluster: Cluster, batch: list[str], rails: dict[str, set[str]]) -> set[str]:
    """Cordon and evict as `kubectl drain --ignore-daemonsets` does; the workloads whose pods wait for
    a drained node (node-local claims) are returned."""
    waiting = set()
    for name in batch:
        node = cluster.nodes[name]
        node.taints = [*node.taints, UNSCHEDULABLE]
    for w in cluster.workloads.values():
        if w.template.daemon or w.done or not set(batch) & set(w.placed):
            continue
        cluster.evict(w, f"evicted by the drain of {', '.join(sorted(set(batch) & set(w.placed)))}")
        if NODE_LOCAL & set(w.claim_classes):
            waiting.add(w.template.ref)
            w.reason = "waits for its node (its volume is on it)"
    cluster.reconcile(rails)
    return waiting


def _uncordon(cluster: Cluster, batch: list[str], rails: dict[str, set[str]]) -> None:
    for name in batch:
        node = cluster.nodes[name]
        node.taints = [t for t in node.taints if t != UNSCHEDULABLE]
    cluster.changes += 1
    cluster.reconcile(rails)


# --- a whole-node job while a node of its pool is down ---------------------------------------------


def gang_job_with_a_node_down(sim: Simulation) -> None:
    """The widest queued GPU job (the acceptance run: whole nodes of a GPU pool) submitted while one
    GPU node is down: Kueue admits it by quota, its pods do not all fit, and it must give its nodes
    back (waitForPodsReady) rather than hold them; once the node returns it runs."""
    for cluster in sim.clusters.values():
        jobs = [
            w for w in cluster.workloads.values()
            if w.template.kind == "Job" and w.done and cluster.queue_of(w)
            and w.template.requests.get(GPU, 0) > 0
        ]  # fmt: skip
        gpu_nodes = sorted(n for n, node in cluster.nodes.items() if node.capacity.get(GPU))
        if not jobs or not gpu_nodes:
            continue
        job = max(jobs, key=lambda w: (w.template.replicas, w.template.ref))
        template = job.unadmitted or job.template
        node = gpu_nodes[0]
        sim.step = f"day 2: {template.ref} submitted while {node} is down"
        cluster.lose_node(node)
        job.done, job.admitted, job.reason = False, None, "submitted again"
        job.template, job.unadmitted = template, None
        cluster.changes += 1
        cluster.reconcile(sim.rails[cluster.name])
        if job.admitted and job.placed:
            gpus = sum(job.template.requests.get(GPU, 0) * n for n in job.placed.values())
            raise Stop(Blocker(cluster.name, sim.step, job.owner, f"{job.template.ref} holds {gpus} GPUs on "
                               f"{len(job.placed)} nodes while it waits for {node}: {job.reason}"))  # fmt: skip
        sim.result.timeline.append(_event(cluster.name, sim.step, f"{job.template.ref}: {job.reason}"))
        returned = cluster.nodes[node]
        returned.ready = returned.reporting = True
        returned.taints = [t for t in returned.taints if t not in NOT_READY]
        cluster.changes += 1
        cluster.reconcile(sim.rails[cluster.name])
        sim.step = f"day 2: {node} back"
        if not job.done:
            raise Stop(
                Blocker(cluster.name, sim.step, job.owner, f"{job.template.ref} never runs: {job.reason}")
            )
        sim.result.timeline.append(
            _event(cluster.name, sim.step, f"{job.template.ref} admitted again and ran to completion")
        )


def a_gpu_breaks(sim: Simulation) -> None:
    """A GPU reports Xid 79 (fallen off the bus): the GPU node guard must cordon its node. It can when
    its Deployment runs, its account may get, list and patch Nodes, the network policies let it reach
    Prometheus and the API server, and the node is one of its hosts. Not modelled: Prometheus' query
    (tests/test_gpu_node_guard.py runs the guard's script against a stand-in)."""
    for cluster in sim.clusters.values():
        gpu_nodes = sorted(n for n, node in cluster.nodes.items() if node.capacity.get(GPU))
        if not gpu_nodes:
            continue
        node = gpu_nodes[-1]
        sim.step = f"day 2: a GPU of {node} reports Xid 79"
        why = _guard_cannot_cordon(cluster, node)
        if why:
            raise Stop(Blocker(cluster.name, sim.step, node, f"stays schedulable: {why}"))
        taints = cluster.nodes[node].taints
        taints.append(UNSCHEDULABLE)
        cluster.nodes[node].labels[guard.CORDON_LABEL] = XID_REASON
        sim.result.timeline.append(_event(cluster.name, sim.step, f"{guard.NAME} cordoned {node}"))
        # repaired, burnt in, uncordoned and unlabelled (RUNBOOK)
        taints.remove(UNSCHEDULABLE)
        del cluster.nodes[node].labels[guard.CORDON_LABEL]


def _guard_cannot_cordon(cluster: Cluster, node: str) -> str | None:
    found = [
        w
        for w in cluster.workloads.values()
        if w.template.kind == "Deployment" and w.template.name == guard.NAME
    ]
    if not found:
        return f"no GPU node guard (Deployment {guard.NAME}) in the cluster"
    (w,) = found
    if not w.running:
        return f"the guard does not run: {w.reason}"
    namespace, spec = w.template.namespace, w.template.spec
    account = (namespace, pod_account(spec))
    refused = [v for v in ("get", "list", "patch") if not cluster.may(account, v, "", "nodes")]
    if refused:
        return f"the guard's account {'/'.join(account)} may not {', '.join(refused)} nodes"
    env = {e["name"]: e.get("value", "") for c in spec["containers"] for e in c.get("env") or []}
    if node not in env.get("HOSTS", "").split():
        return "it is not among the guard's hosts"
    if cluster.enforces_policies():
        view, source = cluster.policy_view(), End(namespace=namespace)
        url = urlparse(env.get("PROMETHEUS", ""))
        service = (url.hostname or "").split(".")
        prometheus = End(namespace=service[1] if len(service) > 1 else "")
        if not view.allows(source, prometheus, url.port):
            return f"the network policies keep the guard from Prometheus ({url.netloc})"
        if not view.allows(source, End(entity="kube-apiserver"), None):
            return "the network policies keep the guard from the API server"
    patched, before = _cordon_patch(cluster, node)
    refused = cluster.policy_refusal(patched, f"system:serviceaccount:{namespace}:{account[1]}", before)
    return f"the API server refuses the guard's cordon: {refused}" if refused else None


def _cordon_patch(cluster: Cluster, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Node after the guard's merge patch, and before it: an update the policies judge."""
    state = cluster.nodes[node]
    old = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": dict(state.labels)},
           "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in state.taints]}}  # fmt: skip
    new = copy.deepcopy(old)
    new["metadata"]["labels"][guard.CORDON_LABEL] = XID_REASON
    new["spec"]["unschedulable"] = True
    return new, old


# --- a node down while a change lands --------------------------------------------------------------


def _node_down_while_a_change_lands(sim: Simulation) -> None:
    assert sim.root is not None
    changed = max(sim.apps.values(), key=lambda a: (a.wave, a.name))
    cluster = changed.cluster
    own = {w.template.ref for w in cluster.workloads.values() if w.owner == changed.name}
    candidates = [
        n for n in sorted(cluster.nodes)
        if not any(n in w.placed for w in cluster.workloads.values() if w.template.ref in own)
        and any(w.template.daemon and n in w.placed for w in cluster.workloads.values())
    ]  # fmt: skip
    if not candidates:
        return
    gpu = [n for n in candidates if cluster.nodes[n].capacity.get("nvidia.com/gpu")]
    node = (gpu or candidates)[0]
    sim.step = f"day 2: {node} NotReady while {changed.name} changes"
    affected = cluster.lose_node(node)
    cluster.reconcile(sim.rails[cluster.name])
    sim.result.timeline.append(
        _event(cluster.name, sim.step, f"{node} NotReady: {len(affected)} workloads affected")
    )
    rollout = sim.root.rollouts.get(changed.generated_by)
    if rollout is not None:
        rollout.changed(changed.name)  # a new revision of its folder: OutOfSync
        changed.resync(list(changed.objects))
        sim.settle()
        if not changed.synced:
            raise Stop(Blocker(
                cluster.name, sim.step, changed.name,
                f"frozen: the change is never synced ({rollout.step_label(changed.name)}); {changed.waiting}",
            ))  # fmt: skip
        sim.result.timeline.append(
            _event(
                cluster.name,
                sim.step,
                f"{rollout.step_label(changed.name)} synced the change to {changed.name} while {node} was "
                "NotReady (the earlier steps' statuses stay Healthy)",
            )
        )
    _root_applies_change(sim, rollout.name if rollout else changed.name, node)


def _root_applies_change(sim: Simulation, name: str, node: str) -> None:
    """One of the root's own objects changes (the ApplicationSet: a new tenant's step): the root syncs
    again and must apply it whatever the foundation's DaemonSets on the down node report."""
    assert sim.root is not None
    hub = sim.root.cluster
    bodies = [copy.deepcopy(dict(b)) for b in sim.root.objects]
    for body in bodies:
        if body.get("kind") in ("Application", "ApplicationSet") and body["metadata"]["name"] == name:
            body["metadata"].setdefault("labels", {})["sitegen.io/day-2"] = "changed"
    tasks = sim.root.resync(bodies)
    sim.settle()
    if not sim.root.synced:
        raise Stop(Blocker(
            hub.name, sim.step, "root",
            f"frozen: the change to {name} is never applied ({len(tasks)} objects to sync); the "
            f"sync waits on {sim.root.waiting}",
        ))  # fmt: skip
    applied = next(
        a for (_, kind, _, n), a in hub.objects.items() if n == name and kind.startswith("Application")
    )
    assert applied.body["metadata"]["labels"]["sitegen.io/day-2"] == "changed"
    sim.result.timeline.append(
        _event(
            hub.name,
            sim.step,
            f"the root applied the change to {name} ({len(tasks)} of "
            f"{len(sim.root.objects)} objects out of sync) while {node} was NotReady",
        )
    )


# --- an ordered chart bump -------------------------------------------------------------------------


def ordered_chart_bump(sim: Simulation, *, reverse_steps: bool = False) -> None:
    """A chart bump that adds a CRD, and in the same commit a consumer's first object of it, both in
    generated apps: the rollout must sync the chart's app (its step) before the consumer's. With
    `reverse_steps`, the ApplicationSet's steps in reverse order (the defect the test reintroduces)."""
    assert sim.root is not None
    found = _bump_pair(sim)
    if found is None:
        return
    rollout, provider, consumer, crd, cr = found
    if reverse_steps:
        rollout.reverse_steps()
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"] + "Next"
    sim.step = f"day 2: chart bump of {provider.name} adds {kind}, {consumer.name} uses it"
    new_crd = copy.deepcopy(dict(crd))
    plural = new_crd["spec"]["names"]["plural"] + "nexts"
    new_crd["spec"]["names"] = {**new_crd["spec"]["names"], "kind": kind, "plural": plural}
    new_crd["spec"]["names"].pop("singular", None)
    new_crd["spec"]["names"].pop("shortNames", None)
    new_crd["metadata"] = {**new_crd["metadata"], "name": f"{plural}.{group}"}
    new_cr = copy.deepcopy(dict(cr))
    new_cr["kind"] = kind
    new_cr["metadata"] = {**new_cr["metadata"], "name": f"{new_cr['metadata']['name']}-next"}
    sim.providers.crds[(provider.cluster.name, group, kind)] = provider.name
    _admit_kind(consumer, group, kind)  # synth adds it to the consumer's project; the root applies that
    for sync, extra in ((provider, new_crd), (consumer, new_cr)):
        rollout.changed(sync.name)
        sync.resync([*sync.objects, extra])
    sim.settle()
    for sync in (provider, consumer):
        if not sync.synced or sync.health()[0] != HEALTHY:
            raise Stop(Blocker(sync.cluster.name, rollout.step_label(sync.name), sync.name, sync.health()[1]))
    sim.result.timeline.append(
        _event(
            consumer.cluster.name,
            sim.step,
            f"synced in order: {provider.name} ({rollout.step_label(provider.name)}), then "
            f"{consumer.name} ({rollout.step_label(consumer.name)})",
        )
    )


def _last_generated(sim: Simulation, exclude: Iterable[str] = ()) -> tuple[Rollout, AppSync] | None:
    assert sim.root is not None
    for rollout in sim.root.rollouts.values():
        names = [n for n in rollout.apps if rollout.step_of[n] >= 0 and n not in exclude]
        if names:
            name = max(names, key=lambda n: (rollout.step_of[n], n))
            return rollout, rollout.apps[name]
    return None


def an_object_removed(sim: Simulation) -> None:
    """A commit removes one object from the last step's app: it stays until pruned by hand."""
    found = _last_generated(sim)
    if found is None:
        return
    rollout, app = found
    removable = [b for b in app.objects if b.get("kind") not in ("Namespace", "CustomResourceDefinition")]
    if not removable:
        return
    body = removable[-1]
    sim.step = f"day 2: {show(key_of(body))} removed from {app.name}"
    rollout.changed(app.name)
    app.resync([b for b in app.objects if b is not body])
    sim.settle()
    if key_of(body) not in app.cluster.objects:
        raise Stop(Blocker(app.cluster.name, sim.step, app.name, "pruned by a sync the rollout started"))
    status, why = rollout.health()
    runbook = sim.texts[paths.bootstrap_dir(sim.variant) / paths.RUNBOOK]
    if "argocd app sync <app> --prune" not in runbook:
        raise Stop(Blocker(
            app.cluster.name, sim.step, app.name,
            f"the rollout's syncs do not prune: the object stays and the ApplicationSet is {status} ({why}); "
            "the RUNBOOK says nowhere how to prune",
        ))  # fmt: skip
    pruned = app.prune_by_hand()
    sim.settle()
    status, why = rollout.health()
    if status != HEALTHY:
        raise Stop(Blocker(app.cluster.name, sim.step, rollout.name, f"{status} after the prune: {why}"))
    sim.result.timeline.append(
        _event(
            app.cluster.name,
            sim.step,
            f"stayed until `argocd app sync {app.name} --prune` ({len(pruned)} object)",
        )
    )


def an_app_removed(sim: Simulation) -> None:
    """An app's element is removed (a component dropped from config/): its Application and objects go."""
    found = _last_generated(sim)
    if found is None:
        return
    rollout, app = found
    sim.step = f"day 2: {app.name} removed"
    orphans = rollout.removed(app.name)
    del sim.apps[app.name]
    if orphans:
        raise Stop(Blocker(
            app.cluster.name, sim.step, app.name,
            f"the Application is deleted without its resources finalizer: {len(orphans)} objects stay, "
            f"running unmanaged ({', '.join(orphans[:3])}{', ...' if len(orphans) > 3 else ''})",
        ))  # fmt: skip
    sim.settle()
    sim.result.timeline.append(
        _event(
            app.cluster.name,
            sim.step,
            "its Application and every object it synced deleted (resources finalizer)",
        )
    )


def _admit_kind(sync: AppSync, group: str, kind: str) -> None:
    if sync.policy is None or sync.policy[0] is None:
        return
    project, server, repo = sync.policy
    spec = dict(project.get("spec") or {})
    if spec.get("namespaceResourceWhitelist") is not None:
        spec["namespaceResourceWhitelist"] = [
            *spec["namespaceResourceWhitelist"],
            {"group": group, "kind": kind},
        ]
    sync.policy = ({**project, "spec": spec}, server, repo)


def _bump_pair(sim: Simulation) -> tuple[Rollout, AppSync, AppSync, Any, Any] | None:
    """The first generated consumer of a CRD that another app of the same rollout ships."""
    assert sim.root is not None
    for rollout in sim.root.rollouts.values():
        order = sorted(rollout.apps.values(), key=lambda a: (rollout.step_of[a.name], a.name))
        for consumer in order:
            for body in consumer.objects:
                group = body.get("apiVersion", "").rpartition("/")[0]
                owner = sim.providers.crds.get((consumer.cluster.name, group, body.get("kind", "")))
                provider = rollout.apps.get(owner or "")
                if provider is None or provider is consumer:
                    continue
                crd = next(
                    (b for b in provider.objects
                     if b.get("kind") == "CustomResourceDefinition"
                     and b["spec"]["group"] == group and b["spec"]["names"]["kind"] == body["kind"]),
                    None,
                )  # fmt: skip
                if crd is not None:
                    return rollout, provider, consumer, crd, body
    return None


def _event(cluster: str, step: str, what: str) -> Event:
    return Event(cluster, step, what)
