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
  changes: the root syncs again, as gitops-engine does it (argo.py, AppSync.resync), and must apply
  the change whatever the DaemonSet apps on that node report.

Not modelled: the upgrade's own effects (API deprecations, new defaults), version skew, the time a
batch takes, the node's return after an hour (the scenario ends when the change is applied or stuck).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING

from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.kube import Taint
from sitegen.check.bringup.runbook import commands
from sitegen.compose import paths
from sitegen.model.maintenance import Budget

if TYPE_CHECKING:
    from sitegen.check.bringup.simulate import Simulation

UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")  # what a cordon adds
NODE_LOCAL = {"directpv-min-io", "topolvm-provisioner"}  # claims that tie a pod to its node
_UPGRADE = re.compile(r"^### Upgrading Kubernetes.*?(?=^### )", re.S | re.M)
_POOL_BATCH = re.compile(r"^  - pool `([\w-]+)` \((\d+) nodes\): (\d+) at a time", re.M)
_CLUSTER = re.compile(r"^- `([\w-]+)`: control plane", re.M)


def replay(sim: Simulation, budgets: dict[str, dict[str, Budget]]) -> None:
    """Both day-2 scenarios; `budgets` per cluster, by pool (AIStor's server pools as `pool/pool-N`)."""
    _upgrade(sim, budgets)
    _node_down_while_a_change_lands(sim)


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


# --- a node down while a change lands --------------------------------------------------------------


def _node_down_while_a_change_lands(sim: Simulation) -> None:
    assert sim.root is not None
    hub = sim.root.cluster
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
    bodies = [copy.deepcopy(dict(b)) for b in sim.root.objects]
    for body in bodies:
        if body.get("kind") == "Application" and body["metadata"]["name"] == changed.name:
            body["spec"]["source"]["targetRevision"] = "day-2"  # a new revision of its folder
    tasks = sim.root.resync(bodies)
    changed.resync(list(changed.objects))
    sim.settle()
    if not sim.root.synced:
        raise Stop(Blocker(
            hub.name, sim.step, "root",
            f"frozen: the change to {changed.name} is never applied ({len(tasks)} objects to sync); the "
            f"sync waits on {sim.root.waiting}",
        ))  # fmt: skip
    applied = hub.objects.get(("argoproj.io", "Application", sim.argocd_namespace, changed.name))
    assert applied is not None and applied.body["spec"]["source"]["targetRevision"] == "day-2"
    sim.result.timeline.append(
        _event(
            hub.name,
            sim.step,
            f"the root applied the change to {changed.name} ({len(tasks)} of "
            f"{len(sim.root.objects)} objects out of sync) while {node} was NotReady",
        )
    )


def _event(cluster: str, step: str, what: str) -> Event:
    return Event(cluster, step, what)
