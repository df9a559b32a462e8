"""Day 2 on the running model, once the first install is up: the RUNBOOK's Kubernetes upgrade, replayed
batch by batch; the delivery's day 2 (delivery_day2.py: commits, drift, renames, failures, spokes in
trouble); a whole-node job while a node is down; a GPU breaking; hosts rebuilt (rebuild.py); the node
of Harbor's database primary lost (database_day2.py); and a node down for good while a chart bump
lands.

- The upgrade: every `kubeadm upgrade` of the RUNBOOK must carry `--patches` with the directory the
  nodes joined with (kubeadm keeps no node's patches in the cluster: without the flag etcd's manifest
  and the kubelet's configuration are written without them). The batches the RUNBOOK names must stay
  inside the model's maintenance budgets. Each batch is drained as `kubectl drain` does it (cordoned:
  the unschedulable taint; DaemonSets stay; other pods are evicted and created again where they fit;
  a pod bound to a node-local volume waits for its node), and every workload that ran before must run
  again elsewhere or be one of those, within the budget; then the batch comes back.
- A whole-node job (the acceptance run) submitted while a node of its pool is down: Kueue admits it
  by quota and, with waitForPodsReady, evicts and requeues it when its pods do not all fit, instead of
  letting it hold the other nodes; it runs once the node is back.
- A GPU reports Xid 79: the GPU node guard must cordon its node.
- A hub node NotReady for good (a GPU node away for repair) while a chart bump lands on one of the
  DaemonSet apps with a pod there and on the last app: every app converges but those the node holds,
  which hold nothing else; the same commit's changed ApplicationSet is applied by the root, which
  waits on it alone (gitops-engine waits on what an operation applied, ApplyOutOfSyncOnly).

Not modelled: the upgrade's own effects (API deprecations, new defaults), version skew, the time a
batch takes, the node's return after the last scenario.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from constructs import gpu_node_guard as guard
from constructs.objects import pod_account
from sitegen.check.bringup import database_day2 as database
from sitegen.check.bringup import delivery_day2 as delivery
from sitegen.check.bringup import rebuild
from sitegen.check.bringup.argo import HEALTHY, AppSync
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.kube import CORDONED, NOT_READY
from sitegen.check.bringup.scripts import run_guard_pass
from sitegen.check.netpol import End
from sitegen.model import paths
from sitegen.model.maintenance import Budget
from sitegen.tree.fields import dig
from sitegen.tree.runbook import commands

if TYPE_CHECKING:
    from sitegen.check.bringup.simulate import Simulation

GPU = "nvidia.com/gpu"
XID_REASON = "gpu-fatal-xid"  # the guard's label value for a fatal Xid (constructs/node_faults.py)
LINK_DOWN = "ndr-link-down"  # and for a fabric port down
_UPGRADE = re.compile(r"^### Upgrading Kubernetes.*?(?=^### )", re.S | re.M)
_POOL_BATCH = re.compile(r"^  - pool `([\w-]+)` \((\d+) nodes\): (\d+) at a time", re.M)
_CLUSTER = re.compile(r"^- `([\w-]+)`: control plane", re.M)


def replay(sim: Simulation, budgets: dict[str, dict[str, Budget]]) -> None:
    """The day-2 scenarios; `budgets` per cluster, by pool (AIStor's server pools as `pool/pool-N`)."""
    sim.state.day2 = True
    for app in sim.state.apps.values():
        app.timed = True
    _upgrade(sim, budgets)
    delivery.a_chart_bump_refreshed_consumer_first(sim)
    delivery.an_admission_policy_drifts(sim)
    delivery.an_object_removed(sim)
    delivery.an_app_renamed(sim)
    delivery.a_failed_app(sim)
    delivery.a_spoke_in_trouble(sim)
    gang_job_with_a_node_down(sim)
    a_gpu_breaks(sim)
    rebuild.hosts_rebuilt(sim)
    database.a_database_node_lost(sim)
    a_node_down_while_a_chart_bump_lands(sim)  # last: the node does not come back


# --- the Kubernetes upgrade ------------------------------------------------------------------------


def _upgrade(sim: Simulation, budgets: dict[str, dict[str, Budget]]) -> None:
    sim.state.step = "day 2: Kubernetes upgrade"
    runbook = sim.state.texts[paths.bootstrap_dir(sim.state.variant) / paths.RUNBOOK]
    section = _UPGRADE.search(runbook)
    if section is None:
        raise sim.state.blocked("-", "RUNBOOK.md", "no Kubernetes upgrade procedure")
    nxt = re.search(r"Upgrading Kubernetes \(v[\d.]+ to (v[\d.]+)\)", section.group(0))
    _packages_first(sim, commands(section.group(0)), nxt.group(1) if nxt else "")
    for words, _ in commands(section.group(0)):
        if words[:2] != ["kubeadm", "upgrade"] or words[2:3] not in (["apply"], ["node"]):
            continue
        given = words[words.index("--patches") + 1] if "--patches" in words else None
        for cluster, dirs in sorted(sim.state.patch_dirs.items()):
            if given not in dirs:
                raise sim.state.blocked(
                    cluster,
                    f"kubeadm upgrade {words[2]}",
                    f"runs {'without --patches' if given is None else f'with --patches {given}'}: the nodes "
                    f"joined with the patches in {', '.join(sorted(dirs))} (etcd's metrics address, the "
                    "pool's kubelet reservations), which kubeadm keeps nowhere else: the upgrade drops them",
                )
    if not any(w[:3] == ["kubeadm", "upgrade", "node"] for w, _ in commands(section.group(0))):
        raise Stop(
            Blocker(
                "-", sim.state.step, "kubeadm upgrade node", "never run: no node but the first is upgraded"
            )
        )
    blocks = re.split(r"(?=^- `)", section.group(0), flags=re.M)
    for block in blocks:
        named = _CLUSTER.match(block)
        if named is None:
            continue
        cluster = sim.state.clusters[named.group(1)]
        control_plane = next(
            n.pool for n in cluster.nodes.values() if "node-role.kubernetes.io/control-plane" in n.labels
        )
        _drain_pool(sim, cluster, control_plane, 1, budgets.get(cluster.name, {}))  # "one at a time"
        for pool, _, size in _POOL_BATCH.findall(block):
            _drain_pool(sim, cluster, pool, int(size), budgets.get(cluster.name, {}))


def _packages_first(sim: Simulation, steps: list[tuple[list[str], list[str]]], nxt: str) -> None:
    """kubeadm upgrades a cluster only up to its own minor, and the baseline holds it at the running
    one: before the first `kubeadm upgrade`, apt must point at the next minor's repository, the hold
    come off kubeadm and the new kubeadm be installed (and the kubelet's before its restart)."""
    words = [w for w, _ in steps]

    def first(test: Callable[[list[str]], bool]) -> int | None:
        return next((i for i, w in enumerate(words) if test(w)), None)

    upgrade = first(lambda w: w[:3] == ["kubeadm", "upgrade", "apply"])
    if upgrade is None:
        return
    source = first(
        lambda w: w[:1] == ["echo"] and w[-1].endswith("/kubernetes.list") and f"/{nxt}/" in " ".join(w)
    )
    unhold = first(lambda w: w[:2] == ["apt-mark", "unhold"] and "kubeadm" in w)
    install = first(lambda w: w[:2] == ["apt-get", "install"] and any(a.startswith("kubeadm=") for a in w))
    restart = first(lambda w: w[:3] == ["systemctl", "restart", "kubelet"])
    kubelet = first(lambda w: w[:2] == ["apt-get", "install"] and any(a.startswith("kubelet=") for a in w))
    missing = [
        why
        for why, at, before in (
            ("points apt at the next minor's repository", source, unhold),
            ("takes the hold off kubeadm", unhold, install),
            ("installs the next kubeadm", install, upgrade),
            ("installs the next kubelet", kubelet, restart),
        )
        if at is None or (before is not None and at > before)
    ]
    if missing:
        raise sim.state.blocked(
            "-",
            "kubeadm upgrade apply",
            f"the RUNBOOK never {missing[0]} before it needs it: a kubeadm held at the running minor "
            "refuses to upgrade the cluster past it",
        )


def _drain_pool(sim: Simulation, cluster: Cluster, pool: str, size: int, budgets: dict[str, Budget]) -> None:
    allowed = [b for name, b in budgets.items() if name == pool or name.startswith(f"{pool}/")]
    for budget in allowed:
        if size > budget.down:
            raise sim.state.blocked(
                cluster.name,
                f"pool {pool}",
                f"the runbook upgrades {size} at a time; the budget of {budget.pool} is {budget.down} "
                f"({budget.why})",
            )
    hosts = sorted(n for n, node in cluster.nodes.items() if node.pool == pool)
    for start in range(0, len(hosts), size):
        batch = hosts[start : start + size]
        running = [w for w in cluster.workloads.values() if w.running]
        waiting = cluster.scheduler.drain(batch)
        cluster.reconcile(sim.state.rails[cluster.name])
        stranded = [w for w in running if not w.running and w.template.ref not in waiting]
        if stranded:
            w = stranded[0]
            raise sim.state.blocked(
                cluster.name,
                w.owner,
                f"draining {', '.join(batch)} leaves {w.template.ref} without a place: {w.reason}",
            )
        note = f"; waiting for their nodes: {', '.join(sorted(waiting))}" if waiting else ""
        sim.state.result.timeline.append(
            _event(
                cluster.name, sim.state.step, f"pool {pool}: {', '.join(batch)} drained, upgraded, back{note}"
            )
        )
        _uncordon(cluster, batch, sim.state.rails[cluster.name])


def _uncordon(cluster: Cluster, batch: list[str], rails: dict[str, set[str]]) -> None:
    for name in batch:
        node = cluster.nodes[name]
        node.taints = [t for t in node.taints if t != CORDONED]
    cluster.changes += 1
    cluster.reconcile(rails)


# --- a whole-node job while a node of its pool is down ---------------------------------------------


def gang_job_with_a_node_down(sim: Simulation) -> None:
    """The widest queued GPU job (the acceptance run: whole nodes of a GPU pool) submitted while one
    GPU node is down: Kueue admits it by quota, its pods do not all fit, and it must give its nodes
    back (waitForPodsReady) rather than hold them; once the node returns it runs."""
    for cluster in sim.state.clusters.values():
        jobs = [
            w for w in cluster.workloads.values()
            if w.template.kind == "Job" and w.done and cluster.kueue.queue_of(w) and w.owner in sim.state.apps
            and w.template.requests.get(GPU, 0) > 0
        ]  # fmt: skip
        gpu_nodes = sorted(n for n, node in cluster.nodes.items() if node.capacity.get(GPU))
        if not jobs or not gpu_nodes:
            continue
        job = max(jobs, key=lambda w: (w.template.replicas, w.template.ref))
        template = job.unadmitted or job.template
        node = gpu_nodes[0]
        sim.state.step = f"day 2: {template.ref} submitted while {node} is down"
        cluster.scheduler.lose_node(node)
        job.done, job.admitted, job.reason = False, None, "submitted again"
        job.template, job.unadmitted = template, None
        cluster.changes += 1
        cluster.reconcile(sim.state.rails[cluster.name])
        if job.admitted and job.placed:
            gpus = sum(job.template.requests.get(GPU, 0) * n for n in job.placed.values())
            raise sim.state.blocked(
                cluster.name,
                job.owner,
                f"{job.template.ref} holds {gpus} GPUs on "
                f"{len(job.placed)} nodes while it waits for {node}: {job.reason}",
            )
        sim.state.result.timeline.append(
            _event(cluster.name, sim.state.step, f"{job.template.ref}: {job.reason}")
        )
        returned = cluster.nodes[node]
        returned.ready = returned.reporting = True
        returned.taints = [t for t in returned.taints if t not in NOT_READY]
        cluster.changes += 1
        cluster.reconcile(sim.state.rails[cluster.name])
        sim.state.step = f"day 2: {node} back"
        if not job.done:
            raise Stop(
                Blocker(
                    cluster.name, sim.state.step, job.owner, f"{job.template.ref} never runs: {job.reason}"
                )
            )
        sim.state.result.timeline.append(
            _event(cluster.name, sim.state.step, f"{job.template.ref} admitted again and ran to completion")
        )


def a_gpu_breaks(sim: Simulation) -> None:
    """A GPU reports Xid 79 (fallen off the bus) while as many other GPU nodes as the guard may hold are
    cordoned by a person (repaired nodes in burn-in) with their NDR links still down (cabling): the GPU
    node guard must cordon the failing node, and leave the person's nodes as they are (they are not its
    cordons and must not count against its limit). It can when its Deployment runs, its account may
    get, list and patch Nodes, the network policies let it reach Prometheus and the API server, the
    node is one of its hosts and the admission policies admit its patch; then its script runs as
    shipped (scripts.py) against an API server that pretty-prints for curl and a Prometheus whose
    queries name those nodes."""
    for cluster in sim.state.clusters.values():
        gpu_nodes = sorted(n for n, node in cluster.nodes.items() if node.capacity.get(GPU))
        if not gpu_nodes:
            continue
        node = gpu_nodes[-1]
        sim.state.step = f"day 2: a GPU of {node} reports Xid 79"
        why = _guard_cannot_cordon(cluster, node)
        if why:
            raise sim.state.blocked(cluster.name, node, f"stays schedulable: {why}")
        deployment = next(
            a.body for _, a in cluster.of_kind("Deployment") if a.body["metadata"]["name"] == guard.NAME
        )
        env = {
            e["name"]: str(e.get("value", ""))
            for e in deployment["spec"]["template"]["spec"]["containers"][0].get("env") or []
        }
        by_hand = gpu_nodes[: int(env.get("MAX_NODES", "0") or 0)]
        for name in by_hand:
            cluster.nodes[name].taints.append(CORDONED)
        run = run_guard_pass(cluster, deployment, {XID_REASON: [node], LINK_DOWN: by_hand})
        for name in by_hand:
            cluster.nodes[name].taints.remove(CORDONED)
        if run is None:
            cluster.assumed.add(
                f"Deployment {guard.NAME}: its script not run (sh, curl or openssl not found here)"
            )
            continue
        after = run.nodes.get(node, {})
        labels = dig(after, "metadata", "labels") or {}
        touched = [n for n in by_hand if guard.CORDON_LABEL in run.nodes[n]["metadata"]["labels"]]
        if run.returncode != 0 or not dig(after, "spec", "unschedulable") or touched:
            said = "; ".join(run.output.splitlines()[-3:])
            what = (
                f"it labelled {', '.join(touched)}, cordoned by a person, as its own"
                if touched
                else "stays schedulable"
            )
            raise Stop(
                Blocker(
                    cluster.name,
                    sim.state.step,
                    node,
                    f"{what}: the guard's pass (exit {run.returncode}) said: {said}",
                )
            )
        sim.state.result.timeline.append(_event(
            cluster.name, sim.state.step,
            f"{guard.NAME} cordoned {node} ({labels.get(guard.CORDON_LABEL)}), leaving {', '.join(by_hand)} "
            "(cordoned by a person) as they were",
        ))  # fmt: skip


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
    refused = [v for v in ("get", "list", "patch") if not cluster.rbac().may(account, v, "", "nodes")]
    if refused:
        return f"the guard's account {'/'.join(account)} may not {', '.join(refused)} nodes"
    env = {e["name"]: e.get("value", "") for c in spec["containers"] for e in c.get("env") or []}
    if node not in env.get("HOSTS", "").split():
        return "it is not among the guard's hosts"
    if cluster.admission.enforces_policies():
        view, source = cluster.admission.policy_view(), End(namespace=namespace)
        url = urlparse(env.get("PROMETHEUS", ""))
        service = (url.hostname or "").split(".")
        prometheus = End(namespace=service[1] if len(service) > 1 else "")
        if not view.allows(source, prometheus, url.port):
            return f"the network policies keep the guard from Prometheus ({url.netloc})"
        if not view.allows(source, End(entity="kube-apiserver"), None):
            return "the network policies keep the guard from the API server"
    patched, before = _cordon_patch(cluster, node)
    refused = cluster.admission.policy_refusal(
        patched, f"system:serviceaccount:{namespace}:{account[1]}", before
    )
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


def a_node_down_while_a_chart_bump_lands(sim: Simulation) -> None:
    """A node of the hub goes NotReady (a GPU node away for repair) and stays so: every DaemonSet with
    a pod there is Progressing for good. A chart bump then lands on one of those apps and on the last
    app of the hub: each syncs by itself; the bumped DaemonSet app stays Progressing and holds nothing,
    and every other app converges. The same commit changes the last ApplicationSet: the hub's root
    applies only that set and waits only on its apps."""
    assert sim.state.root is not None
    hub = sim.state.clusters[sim.state.layout.hub.name]
    nodes = [
        n for n in sorted(hub.nodes)
        if any(w.template.daemon and n in w.placed for w in hub.workloads.values())
    ]  # fmt: skip
    if not nodes:
        return
    gpu = [n for n in nodes if hub.nodes[n].capacity.get(GPU)]
    node = (gpu or nodes)[0]
    held = {w.owner for w in hub.workloads.values() if node in w.placed}
    daemon_apps = sorted(
        {w.owner for w in hub.workloads.values() if w.template.daemon and node in w.placed}
        & set(sim.state.apps)
    )
    quiet = [a for a in sim.state.apps.values() if a.generated_by and a.cluster is hub and a.name not in held]
    last = max(quiet, key=lambda a: (a.wave, a.name))
    bumped = sim.state.apps[daemon_apps[0]]
    sim.state.step = f"day 2: {node} NotReady while a chart bump lands on {bumped.name} and {last.name}"
    affected = hub.scheduler.lose_node(node)
    hub.reconcile(sim.state.rails[hub.name])
    changes = {a.name: [_labelled(a.objects[-1]), *a.objects[:-1]] for a in (bumped, last)}
    for name in sorted(changes):
        sim.state.apps[name].resync(changes[name])
    root_tasks = _change_the_set_of(sim, last)
    sim.convergence.settle()
    sick = [
        a
        for a in sim.state.apps.values()
        if a.name not in held and (a.health()[0] != HEALTHY or a.sync_status() != "Synced")
    ]
    if sick:
        a = sick[0]
        raise Stop(
            Blocker(
                a.cluster.name,
                sim.state.step,
                a.name,
                f"held by {node}: {a.sync_status()}, {a.health()[1] or a.waiting}",
            )
        )
    if not sim.state.root.synced:
        raise Stop(
            Blocker(
                hub.name,
                sim.state.step,
                "root",
                f"frozen: the changed ApplicationSet is never applied; {sim.state.root.waiting}",
            )
        )
    status = bumped.health()
    sim.state.result.timeline.append(_event(
        hub.name, sim.state.step,
        f"{node} NotReady ({len(affected)} workloads); {len(daemon_apps)} DaemonSet apps Progressing "
        f"({bumped.name}: {bumped.sync_status()}, {status[0]}), holding nothing: {last.name} and every "
        f"other app converged, the root applied {root_tasks} changed object(s) and waited on them alone",
    ))  # fmt: skip


def _labelled(body: Mapping[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(dict(body))
    changed["metadata"].setdefault("labels", {})["sitegen.io/day-2"] = "changed"
    return changed


def _change_the_set_of(sim: Simulation, app: AppSync) -> int:
    """The root's copy of the app's ApplicationSet changes (a template change): the root syncs again,
    applying only what differs (ApplyOutOfSyncOnly). Returns how many objects it applies."""
    assert sim.state.root is not None
    bodies = [
        _labelled(b) if b.get("kind") == "ApplicationSet" and b["metadata"]["name"] == app.generated_by else b
        for b in sim.state.root.objects
    ]
    return len(sim.state.root.resync(bodies))


def _event(cluster: str, step: str, what: str) -> Event:
    return Event(cluster, step, what)
