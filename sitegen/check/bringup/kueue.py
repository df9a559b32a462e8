"""Kueue: which workloads it manages (a queue-name label, in a namespace its managedJobsNamespaceSelector
selects; with manageJobsWithoutQueueName, every workload of an enabled integration there, an unlabeled
one in the namespace's LocalQueue `default` if it exists, else held for good: kueue v0.19
jobframework.ApplyDefaultLocalQueue and WorkloadShouldBeSuspended), and their admission in priority order into the nominal quota of their LocalQueue's
ClusterQueue, preempting lower priorities of the same ClusterQueue where its withinClusterQueue policy
allows. A ClusterQueue admits workloads only from the namespaces its namespaceSelector selects (unset:
none, `{}`: all); another stays pending, "workload namespace doesn't match ClusterQueue selector"
(v0.19.2 workload.ValidateAdmissibility). A workload Kueue has not admitted does not start (scheduling.py).

At admission the first flavor that covers the workload's resources is assigned, and its node labels
and tolerations are injected into the pods, as Kueue does.

waitForPodsReady (all or nothing): an admitted workload whose pods are not all Ready (a 12-node job
while a GPU node is down, pods a ResourceQuota refuses) is evicted, giving its nodes and quota back,
and requeued with backoff; it is admitted again once what held its pods changed (a node comes back, a
cordon lifts, the refusal is another). Without it the workload stays admitted and
holds what its placed pods took.

Cohorts (spec.cohortName): a workload is admitted while its cohort's ClusterQueues together hold
what it asks (borrowing what the others leave unused; no borrowingLimit or lendingLimit is set); one
that fits its own queue's nominal quota takes it back by preempting what other queues borrowed, as
reclaimWithinCohort allows, borrowed work first, lowest priority first. A borrowing workload preempts
nothing outside its queue (borrowWithinCohort unset).

Not modelled: hierarchical cohorts (Cohort objects), fair sharing between ClusterQueues, flavor
quotas (summed per resource), admission fair sharing (the ClusterQueue's admission fair sharing orders waiting workloads of equal priority by their LocalQueues'
decayed GPU use over their weight: time, which this simulation does not have), admission checks,
partial admission, queueing strategies (here: by priority, then by key), the
timeout's length and the backoff's (a requeued workload waits for a change of the nodes or their
taints), the
recoveryTimeout of a running workload that loses a pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from sitegen.check.bringup.kube import add, label_selector_matches, quantity
from sitegen.check.bringup.objects import ClusterObjects, Key, Workload
from sitegen.check.bringup.scheduling import Scheduler, usage
from sitegen.check.kueue_config import configuration, managed_namespaces
from sitegen.tree.fields import dig

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
PREEMPTING = {"LowerPriority", "LowerOrNewerEqualPriority", "Any"}
DEFAULT_QUEUE = "default"  # constants.DefaultLocalQueueName
# Kueue's integration names (config `integrations.frameworks`) -> the kinds of our templates they manage
# (a CronJob's Jobs are Jobs).
INTEGRATION_KINDS = {
    "batch/job": ("Job", "CronJob"),
    "pod": ("Pod",),
    "deployment": ("Deployment",),
    "statefulset": ("StatefulSet",),
}


class Kueue:
    """Kueue's admission of the cluster's workloads; a preempted workload gives its nodes back
    (`Scheduler.release`)."""

    def __init__(
        self, cluster: ClusterObjects, scheduler: Scheduler, pod_blocker: Callable[[Workload], str | None]
    ) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.pod_blocker = pod_blocker

    # ---- Kueue -----------------------------------------------------------------------------------
    def queue_of(self, w: Workload) -> str | None:
        """The queue of a workload Kueue manages (in a namespace Kueue's configuration selects): its
        label; without one, when Kueue manages unlabeled jobs, `default` if that LocalQueue exists, else
        "" (a queue no LocalQueue has: held). None: Kueue leaves it alone."""
        body = self.cluster.objects_body(w)
        labels = {**w.template.labels, **(dig(body, "metadata", "labels") or {})}
        selector = self._kueue_namespaces()
        if selector is None or not label_selector_matches(
            selector, self.cluster.namespace_labels(w.template.namespace)
        ):
            return None
        if KUEUE_QUEUE in labels:
            return labels[KUEUE_QUEUE]
        if w.template.kind not in self._unlabeled_kinds():
            return None
        return DEFAULT_QUEUE if self.cluster.find("LocalQueue", w.template.namespace, DEFAULT_QUEUE) else ""

    def _unlabeled_kinds(self) -> frozenset[str]:
        """The kinds Kueue manages without a queue label: none unless manageJobsWithoutQueueName."""
        found = self._kueue_configuration()
        if found is None or not found[0].get("manageJobsWithoutQueueName"):
            return frozenset()
        frameworks = dig(found[0], "integrations", "frameworks") or []
        return frozenset(kind for f in frameworks for kind in INTEGRATION_KINDS.get(f, ()))

    def _kueue_configuration(self) -> tuple[Mapping[str, Any], str] | None:
        """Kueue's controller configuration and the namespace it runs in; None without Kueue (found
        again only once the cluster changed: every workload asks, every round)."""
        return self.cluster.unchanged(("kueue configuration",), self._find_kueue_configuration)  # type: ignore[no-any-return]

    def _find_kueue_configuration(self) -> tuple[Mapping[str, Any], str] | None:
        return configuration(applied.body for _, applied in self.cluster.of_kind("ConfigMap"))

    def _kueue_namespaces(self) -> Mapping[str, Any] | None:
        """Kueue's managedJobsNamespaceSelector (its default when unset); None without Kueue."""
        found = self._kueue_configuration()
        if found is None:
            return None
        return managed_namespaces(*found)

    def admit(self) -> None:
        managed = [
            (k, w)
            for k, w in sorted(self.cluster.workloads.items())
            if self.queue_of(w) is not None and not w.done
        ]
        if not managed:
            return
        for _, w in managed:
            if w.admitted is None:
                w.admitted = False
                w.priority = self._priority(w)
        self._requeue_unready(managed)
        nodes = self._node_state()
        for _, w in sorted(managed, key=lambda kw: (-kw[1].priority, kw[0])):
            if w.admitted:
                continue
            if w.backoff is not None:
                if w.backoff == nodes or w.backoff == ("pods", self.pod_blocker(w)):
                    continue
                w.backoff = None
            why = self._admission(w, managed) or self._assign_flavor(w)
            if why is None:
                w.admitted = True
                w.reason = "admitted by Kueue"
                self._suspend(w, False)
                self.cluster.log.append((w.owner, f"Kueue admitted {w.template.ref} (priority {w.priority})"))
                self.cluster.changes += 1
            elif w.reason != why:
                w.reason = why

    def _requeue_unready(self, managed: list[tuple[Key, Workload]]) -> None:
        wait = self._pods_ready_wait()
        for _, w in managed:
            if not (w.admitted and w.unplaced and not w.running) or wait is None:
                continue
            why = w.reason
            w.unplaced = False
            self._evict(w, f"evicted by Kueue: its pods were not all Ready within waitForPodsReady's {wait} "
                        f"({why}); requeued with backoff, its nodes and quota given back")  # fmt: skip
            blocked = self.pod_blocker(w)
            w.backoff = self._node_state() if blocked is None else ("pods", blocked)

    def _node_state(self) -> frozenset[tuple[str, tuple[object, ...]]]:
        """What a requeued workload waits to change: which nodes are up, and their taints (a cordon)."""
        return frozenset(
            (n, tuple(node.taints)) for n, node in self.cluster.nodes.items() if node.ready and node.reporting
        )

    def _pods_ready_wait(self) -> str | None:
        """waitForPodsReady's timeout in Kueue's configuration (present means on), or None."""
        found = self._kueue_configuration()
        wait = found[0].get("waitForPodsReady") if found is not None else None
        return None if wait is None else str(dig(wait, "timeout", default="5m"))

    def _priority(self, w: Workload) -> int:
        body = self.cluster.objects_body(w)
        labels = {**w.template.labels, **(dig(body, "metadata", "labels") or {})}
        name = labels.get(KUEUE_PRIORITY)
        found = self.cluster.find("WorkloadPriorityClass", "", name) if name else None
        return int(found.body.get("value", 0)) if found else 0

    def _admission(self, w: Workload, managed: list[tuple[Key, Workload]]) -> str | None:
        if not self.cluster.controller_running("kueue.x-k8s.io", "ClusterQueue"):
            return "Kueue is not running"
        queue_name = self.queue_of(w)
        if not queue_name:
            return (
                f"held by Kueue: no queue-name label, and {w.template.namespace} has no LocalQueue "
                f"`{DEFAULT_QUEUE}` (manageJobsWithoutQueueName)"
            )
        local = self.cluster.find("LocalQueue", w.template.namespace, queue_name)
        if local is None:
            return f"LocalQueue {w.template.namespace}/{queue_name} does not exist"
        cq_name = local.body["spec"]["clusterQueue"]
        cq = self.cluster.find("ClusterQueue", "", cq_name)
        if cq is None:
            return f"ClusterQueue {cq_name} does not exist"
        if not selects(cq.body, self.cluster.namespace_labels(w.template.namespace)):
            return (
                f"ClusterQueue {cq_name}: workload namespace doesn't match ClusterQueue selector "
                f"({w.template.namespace} is outside its namespaceSelector)"
            )
        need = _total(w)
        queues = self._cohort_of(cq.body)
        quota = queues[cq_name]
        for resource in sorted(need):
            if resource not in quota:
                return f"ClusterQueue {cq_name} covers no {resource}"
        held: dict[str, list[Workload]] = {name: [] for name in queues}
        for _, p in managed:
            if p is not w and p.admitted and (name := self._cluster_queue(p)) in queues:
                held[name].append(p)
        used = {name: _sum(ws) for name, ws in held.items()}
        if _fits(need, used, queues):
            return None
        spec = cq.body["spec"]
        within = dig(spec, "preemption", "withinClusterQueue", default="Never") in PREEMPTING
        reclaim = dig(spec, "preemption", "reclaimWithinCohort", default="Never")
        own_nominal = all(used[cq_name].get(r, 0) + n <= quota[r] for r, n in need.items())
        victims = [p for p in held[cq_name] if within and p.priority < w.priority]
        borrowers = [  # reclaiming is for a workload that fits its queue's nominal quota
            (name, p)
            for name, ws in sorted(held.items())
            if name != cq_name and own_nominal and reclaim in PREEMPTING
            for p in ws
            if reclaim == "Any" or p.priority < w.priority
        ]
        if not within and not borrowers:
            return f"ClusterQueue {cq_name} is full and preempts nothing ({self._short(need, cq_name, used, queues)})"
        # what other queues borrowed goes first (Kueue's candidate order), then the lowest priority
        for name, victim in sorted(borrowers, key=lambda nv: nv[1].priority):
            if not _borrowing(used[name], queues[name]):
                continue
            add(used[name], _total(victim), -1)
            self._evict(
                victim, f"preempted by {w.template.ref}: ClusterQueue {cq_name} takes back its nominal quota"
            )
            if _fits(need, used, queues):
                return None
        for victim in sorted(victims, key=lambda p: p.priority):
            add(used[cq_name], _total(victim), -1)
            self._evict(victim, f"preempted by {w.template.ref}")
            if _fits(need, used, queues):
                return None
        return f"ClusterQueue {cq_name} cannot make room ({self._short(need, cq_name, used, queues)})"

    def _cohort_of(self, cq: Mapping[str, Any]) -> dict[str, dict[str, int]]:
        """The nominal quota of the ClusterQueue and of every other in its cohort (spec.cohortName), by
        name: the quota a workload may borrow from (no borrowingLimit or lendingLimit is set)."""
        name = cq["metadata"]["name"]
        cohort = cq["spec"].get("cohortName")
        queues = {name: _quota(cq)}
        if cohort:
            for _, other in self.cluster.of_kind("ClusterQueue"):
                if other.body["spec"].get("cohortName") == cohort:
                    queues[other.body["metadata"]["name"]] = _quota(other.body)
        return queues

    @staticmethod
    def _short(
        need: Mapping[str, int],
        cq_name: str,
        used: Mapping[str, dict[str, int]],
        queues: Mapping[str, dict[str, int]],
    ) -> str:
        if len(queues) == 1:
            return usage(used[cq_name], need, queues[cq_name])
        return "its cohort: " + usage(_pooled(need, used), need, _pooled(need, queues))

    def _assign_flavor(self, w: Workload) -> str | None:
        """Admission assigns the first flavor of the ClusterQueue that covers the workload's resources
        and injects its node labels (as node selector) and tolerations into the pods (kueue
        ResourceFlavor: nodeLabels, tolerations); eviction restores the template (`_evict`)."""
        cq = self.cluster.find("ClusterQueue", "", self._cluster_queue(w) or "")
        need = set(_total(w))
        flavors = [
            flavor["name"]
            for group in (cq.body["spec"].get("resourceGroups") or [] if cq else [])
            if need <= set(group.get("coveredResources") or [])
            for flavor in group.get("flavors") or []
        ]
        if not flavors:
            return None
        found = self.cluster.find("ResourceFlavor", "", flavors[0])
        if found is None:
            return f"ResourceFlavor {flavors[0]} does not exist (its ClusterQueue is inactive)"
        spec = found.body.get("spec") or {}
        if spec.get("nodeLabels") or spec.get("tolerations"):
            w.unadmitted = w.template
            pod = dict(w.template.spec)
            pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **(spec.get("nodeLabels") or {})}
            pod["tolerations"] = [*(pod.get("tolerations") or []), *(spec.get("tolerations") or [])]
            w.template = dataclasses.replace(w.template, spec=pod)
        return None

    def _cluster_queue(self, w: Workload) -> str | None:
        local = self.cluster.find("LocalQueue", w.template.namespace, self.queue_of(w) or "")
        return local.body["spec"]["clusterQueue"] if local else None

    def _evict(self, w: Workload, why: str) -> None:
        self.scheduler.release(w)
        if w.unadmitted is not None:
            w.template, w.unadmitted = w.unadmitted, None
        w.admitted = False
        w.reason = why
        self._suspend(w, True)
        self.cluster.log.append((w.owner, f"{w.template.ref} {why}"))
        self.cluster.changes += 1

    def _suspend(self, w: Workload, suspended: bool) -> None:
        """A Job's `spec.suspend`, as Kueue writes it when it admits (false) or evicts (true) it: the
        Kueue component's declared field (`Kueue.writes`); other kinds Kueue suspends otherwise."""
        if w.template.kind == "Job":
            t = w.template
            self.cluster.write_field(
                ("batch", "Job", t.namespace, t.name), "/spec/suspend", suspended, "Kueue"
            )


def selects(cluster_queue: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> bool:
    """A ClusterQueue's namespaceSelector (kueue v0.19.2 cache/scheduler/clusterqueue.go through
    metav1.LabelSelectorAsSelector): unset selects no namespace, `{}` every one."""
    selector = dig(cluster_queue, "spec", "namespaceSelector")
    return selector is not None and label_selector_matches(selector, namespace_labels)


def _quota(cluster_queue: Mapping[str, Any]) -> dict[str, int]:
    quota: dict[str, int] = {}
    for group in cluster_queue["spec"].get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                add(quota, {r["name"]: quantity(r["nominalQuota"], milli=r["name"] == "cpu")})
    return quota


def _sum(workloads: list[Workload]) -> dict[str, int]:
    total: dict[str, int] = {}
    for w in workloads:
        add(total, _total(w))
    return total


def _pooled(need: Mapping[str, int], per_queue: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Each resource `need` names, summed over the cohort's queues (their use, or their quotas)."""
    return {r: sum(q.get(r, 0) for q in per_queue.values()) for r in need}


def _fits(
    need: Mapping[str, int], used: Mapping[str, dict[str, int]], queues: Mapping[str, dict[str, int]]
) -> bool:
    """Within what the cohort's queues hold together (a queue alone: its nominal quota): what one
    leaves unused another borrows."""
    pooled, held = _pooled(need, used), _pooled(need, queues)
    return all(pooled[r] + n <= held[r] for r, n in need.items())


def _borrowing(used: Mapping[str, int], quota: Mapping[str, int]) -> bool:
    return any(n > quota.get(r, 0) for r, n in used.items())


def _total(w: Workload) -> dict[str, int]:
    return {k: v * max(w.template.replicas, 1) for k, v in w.template.requests.items()}
