"""Day 2 of a database: the node that holds the primary of each CloudNativePG Cluster (Harbor's,
Grafana's) is lost for good, and its service must come back with every commit it was told was
committed.

From CloudNativePG 1.30's documented behaviour (docs/src/failover.md, replication.md):
- a commit is acknowledged once the primary has it and, under `postgresql.synchronous`, as many
  standbys as `number` asks (`method: any`: whichever answer first; `first`: in the order listed).
  Without it (or `dataDurability: preferred` short of standbys) the primary alone acknowledges and a
  standby may lag by the last commits: the worst case, which the model takes;
- the primary's pod not Ready (its node NotReady) starts a failover: the most advanced standby is
  promoted (after its lease expires) and `<cluster>-rw` follows it. What the promoted standby does not
  have of the acknowledged commits is lost;
- with `dataDurability: required`, commits wait while fewer standbys run than `number`: the database
  takes no write until an instance is back;
- an instance's volumes on a node-local class stay on the lost node: its pod waits for it until every
  claim of it (`<cluster>-<n>`, `<cluster>-<n>-wal`) and its pod (or the Node, whose pods go with it)
  are deleted, then the operator clones a new instance from the primary where the anti-affinity
  allows. Other workloads of the node: as `kubectl delete node` leaves them (scheduling.py); those
  with a node-local claim wait for the host, and are named.

The RUNBOOK's section for the lost node is replayed (its `kubectl` lines; `<n>`, the lost instance);
then the database must run every instance, take writes, have lost nothing acknowledged (the RPO a node
loss promises is none), and every Application with objects in its namespace (its service's) be
Healthy.
The host joins again at the end, rebuilt, for the scenarios after this one.

Not modelled: time (the grace period, the lease, the clone's copy), the WAL archive's part (a standby
that lags reads from it; its gap is the archive's, `archive_timeout`), queries in flight at the
failover (they fail and the service retries), pg_rewind of a former primary that returns with its disks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sitegen.check.bringup import rebuild
from sitegen.check.bringup.argo import HEALTHY
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.events import Event
from sitegen.check.bringup.kube import NOT_READY, Node
from sitegen.check.bringup.objects import Workload
from sitegen.check.bringup.operators import CNPG_CLUSTER
from sitegen.components.storage.database import PostgresDatabase
from sitegen.tree.fields import dig
from sitegen.tree.runbook import commands

if TYPE_CHECKING:
    from sitegen.check.bringup.simulate import Simulation

COMMITS = 1000  # its service's writes before the node goes (Harbor's pushes, Grafana's sessions)


@dataclass
class Replication:
    """Who holds which of the acknowledged commits: instance number -> node, and -> commits received."""

    body: Mapping[str, Any]
    nodes: dict[int, str]
    primary: int = 1
    received: dict[int, int] = field(default_factory=dict)
    acknowledged: int = 0

    @property
    def synchronous(self) -> tuple[int, str]:
        """How many standbys a commit waits for, and the durability (`required` or `preferred`)."""
        sync = dig(self.body, "spec", "postgresql", "synchronous") or {}
        if not sync:
            return 0, "preferred"
        return int(sync.get("number", 0)), str(sync.get("dataDurability", "required"))

    def standbys(self, running: set[int]) -> list[int]:
        return sorted(n for n in self.nodes if n != self.primary and n in running)

    def commit(self, count: int, running: set[int]) -> str | None:
        """`count` commits by the service: each lands on the primary and on the synchronous standbys it waits
        for; the others get none (the worst lag). Returns why no commit is acknowledged, if none is."""
        number, durability = self.synchronous
        standbys = self.standbys(running)
        if len(standbys) < number and durability == "required":
            return (
                f"{len(standbys)} standby(s) run and each commit waits for {number} (dataDurability required)"
            )
        self.acknowledged += count
        self.received[self.primary] = self.acknowledged
        for n in standbys[: min(number, len(standbys))]:
            self.received[n] = self.acknowledged
        return None

    def fail_over(self, running: set[int]) -> int:
        """The most advanced running standby becomes the primary. Returns the acknowledged commits it
        does not have."""
        candidates = self.standbys(running)
        if not candidates:
            return self.acknowledged
        promoted = max(candidates, key=lambda n: (self.received.get(n, 0), -n))
        self.primary = promoted
        return self.acknowledged - self.received.get(promoted, 0)


def a_database_node_lost(sim: Simulation) -> None:
    for cluster in sim.state.clusters.values():
        for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
            if w.operator == CNPG_CLUSTER and w.running and w.placed:
                _lose_the_primary(sim, cluster, w)


def _lose_the_primary(sim: Simulation, cluster: Cluster, w: Workload) -> None:
    t = w.template
    found = cluster.find("Cluster", t.namespace, t.name)
    if found is None:
        return
    replication = Replication(found.body, dict(enumerate(sorted(w.placed), start=1)))
    every = set(replication.nodes)
    refused = replication.commit(COMMITS, every)
    if refused:
        raise sim.state.blocked(cluster.name, w.owner, f"{t.name} takes no write: {refused}")
    node = replication.nodes[replication.primary]
    lost_instance = replication.primary
    sim.state.step = f"day 2: {node} lost for good, the node of {t.namespace}/{t.name}'s primary ({t.name}-{lost_instance})"
    held = [h for h in cluster.workloads.values() if node in h.placed and h.running and not h.template.daemon]
    before = cluster.nodes[node]
    cluster.scheduler.lose_node(node)
    cluster.reconcile(sim.state.rails[cluster.name])
    running = every - {lost_instance}
    lost = replication.fail_over(running)
    if lost:
        raise sim.state.blocked(
            cluster.name,
            w.owner,
            f"{lost} of {replication.acknowledged} commits its clients were told were committed are not on any "
            f"standby: {t.name}-{replication.primary} is promoted without them (no synchronous standby); "
            "a node lost must lose none",
        )
    stalled = replication.commit(1, running)  # the next write, before the section is followed
    _replay(sim, cluster, w, lost_instance, node)
    cluster.reconcile(sim.state.rails[cluster.name])
    instances = int(dig(found.body, "spec", "instances", default=1))
    if not w.running or sum(w.placed.values()) != instances:
        raise sim.state.blocked(
            cluster.name,
            w.owner,
            f"{t.name} does not run {instances} instances again after the RUNBOOK's section: {w.reason}",
        )
    new_node = next(n for n in sorted(w.placed) if n not in replication.nodes.values())
    new_instance = max(replication.nodes) + 1  # the operator never reuses an instance's serial
    replication.nodes[new_instance] = new_node
    refused = replication.commit(1, running | {new_instance})
    if refused:
        raise sim.state.blocked(cluster.name, w.owner, f"{t.name} takes no write: {refused}")
    waiting = [h for h in held if h.stranded_on == node]
    down = [h for h in held if not h.running and not h.done and h is not w and h not in waiting]
    if down:
        raise sim.state.blocked(
            cluster.name,
            down[0].owner,
            f"{down[0].template.ref} does not run again without {node}: {down[0].reason}",
        )
    _healthy(sim, cluster, t.namespace)
    sim.state.result.timeline.append(Event(cluster.name, sim.state.step, (
        f"{t.name}-{replication.primary} promoted with all {COMMITS} acknowledged commits (lost: 0); "
        + (f"writes waited ({stalled}) " if stalled else "writes went on ")
        + f"until the RUNBOOK's section replaced {t.name}-{lost_instance} by {t.name}-{new_instance} on "
        f"{new_node}; {len(held) - len(waiting)} workloads of {node} running elsewhere, the apps of "
        f"{t.namespace} Healthy"
        + (f"; waiting for the host's rebuild (their node-local claims): {', '.join(h.template.ref for h in waiting)}"
           if waiting else "")
    )))  # fmt: skip
    _node_returns(sim, cluster, before)


def _replay(sim: Simulation, cluster: Cluster, w: Workload, instance: int, node: str) -> None:
    """The section's `kubectl` lines: the Node deleted (its pods go with it), the lost instance's claims
    deleted and its pod deleted or gone; then the operator clones a new instance elsewhere."""
    t = w.template
    text = (
        rebuild._section(sim, PostgresDatabase.lost_node_title(t.name, cluster.name))
        .replace(PostgresDatabase.instance_placeholder, str(instance))
        .replace("<node>", node)
    )
    pod = f"{t.name}-{instance}"
    claims = {f"{t.name}-{instance}"} | ({f"{t.name}-{instance}-wal"} if _has_wal(cluster, t) else set())
    pod_gone, deleted = False, set()
    for words, _ in commands(text):
        if words[:1] != ["kubectl"]:
            continue
        namespace = words[words.index("-n") + 1] if "-n" in words else ""
        verb = [x for i, x in enumerate(words[1:], 1) if not x.startswith("-") and words[i - 1] != "-n"]
        if verb[:2] == ["delete", "node"] and node in verb[2:] and node in cluster.nodes:
            cluster.scheduler.remove_node(node)
            cluster.reconcile(sim.state.rails[cluster.name])
            pod_gone = True
        elif verb[:2] == ["delete", "pod"] and namespace == t.namespace and pod in verb[2:]:
            pod_gone = True
        elif verb[:2] == ["delete", "pvc"] and namespace == t.namespace:
            deleted |= claims & set(verb[2:])
    if not pod_gone or deleted != claims:
        left = sorted(claims - deleted) + ([] if pod_gone else [f"pod {pod}"])
        raise sim.state.blocked(
            cluster.name,
            "RUNBOOK.md",
            f"{PostgresDatabase.lost_node_title(t.name, cluster.name)}: {', '.join(left)} stay, so {pod} waits for {node} for good "
            "(its volumes are on it)",
        )
    w.stranded_on = None  # the operator clones a new instance from the primary where the anti-affinity allows
    if node in w.placed:
        cluster.scheduler.delete_pods_on(w, node, f"{pod} and its claims deleted: a new instance is cloned")
    w.reason = f"{pod} and its claims deleted: a new instance is cloned"
    cluster.changes += 1


def _has_wal(cluster: Cluster, t: Any) -> bool:
    found = cluster.find("Cluster", t.namespace, t.name)
    return bool(found and dig(found.body, "spec", "walStorage"))


def _healthy(sim: Simulation, cluster: Cluster, namespace: str) -> None:
    """Every app with objects in the database's namespace (its service) is Healthy."""
    sim.convergence.settle()
    for app in sorted(sim.state.apps.values(), key=lambda a: a.name):
        if app.cluster is not cluster or not any(
            dig(o, "metadata", "namespace") == namespace for o in app.objects
        ):
            continue
        status, why = app.health()
        if status != HEALTHY:
            raise sim.state.blocked(cluster.name, app.name, f"{status}: {why}")


def _node_returns(sim: Simulation, cluster: Cluster, node: Node) -> None:
    """The host joins again under its name (rebuilt), for the scenarios after this one."""
    cluster.nodes[node.name] = replace(node, used={}, host_ports={}, ready=True, reporting=True,
                                       taints=[t for t in node.taints if t not in NOT_READY])  # fmt: skip
    cluster.scheduler.nodes_changed()
    cluster.changes += 1
    cluster.reconcile(sim.state.rails[cluster.name])
    sim.convergence.settle()
