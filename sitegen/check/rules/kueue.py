"""Kueue rules: every GPU workload the site renders can be admitted, by design, not by luck."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from constructs.kueue import GPU_RESOURCE as GPU
from constructs.kueue import PRIORITY_LABEL, QUEUE_LABEL
from sitegen.check.kueue_config import configuration, managed_namespaces
from sitegen.check.labels import label_selector_matches
from sitegen.check.placement import pod_spec
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

LONG_RUNNING = ("StatefulSet", "Deployment")  # hold their GPUs until someone takes them


@dataclass(frozen=True)
class _Workload:
    doc: Document
    queue: str  # the ClusterQueue
    gpus: int
    priority: int


def _gpus(doc: Document) -> int:
    found = pod_spec(doc)
    if found is None:
        return 0
    per_pod = sum(
        int(dig(c, "resources", "limits", GPU, default=0) or 0) for c in found[1].get("containers") or []
    )
    spec = doc.body.get("spec") or {}
    pods = spec.get("parallelism", 1) if doc.kind == "Job" else spec.get("replicas", 1)
    return per_pod * int(pods)


def _quota(queue: dict[str, Any]) -> int:
    return sum(
        int(r.get("nominalQuota", 0))
        for group in dig(queue, "spec", "resourceGroups") or []
        for flavor in group.get("flavors") or []
        for r in flavor.get("resources") or []
        if r.get("name") == GPU
    )


@rule(
    "KUE-001",
    "gpu-workloads-admissible",
    "a workload whose GPUs the queue can never free stays suspended: it needs the quota, or priority over the holders",
)
def _admissible(ctx: Context) -> Iterator[Violation]:
    for docs in ctx.cluster_objects.values():
        kueue = [d for d in docs if d.group == "kueue.x-k8s.io"]
        queues = {d.name: d.body for d in kueue if d.kind == "ClusterQueue"}
        local = {
            (d.namespace, d.name): dig(d.body, "spec", "clusterQueue")
            for d in kueue
            if d.kind == "LocalQueue"
        }
        classes = {d.name: int(d.body.get("value", 0)) for d in kueue if d.kind == "WorkloadPriorityClass"}
        workloads = []
        for doc in docs:
            labels = dig(doc.body, "metadata", "labels") or {}
            if QUEUE_LABEL not in labels:
                continue
            gpus = _gpus(doc)
            queue = local.get((doc.namespace, labels[QUEUE_LABEL]))
            if gpus and queue in queues:
                workloads.append(_Workload(doc, queue, gpus, classes.get(labels.get(PRIORITY_LABEL, ""), 0)))
        cohort_of = {name: dig(q, "spec", "cohortName") or name for name, q in queues.items()}
        for w in workloads:
            queue = queues[w.queue]
            cohort = [name for name in queues if cohort_of[name] == cohort_of[w.queue]]
            quota = sum(_quota(queues[name]) for name in cohort)
            preempts = dig(queue, "spec", "preemption", "withinClusterQueue", default="Never")
            holders = [  # other queues' long-running work stays within their nominal quota: kept
                v
                for v in workloads
                if v is not w
                and v.queue in cohort
                and v.doc.kind in LONG_RUNNING
                and (v.queue != w.queue or preempts == "Never" or v.priority >= w.priority)
            ]
            held = sum(v.gpus for v in holders)
            where = f"ClusterQueue {w.queue}" + (
                f" and its cohort {cohort_of[w.queue]}" if len(cohort) > 1 else ""
            )
            if w.gpus > quota - held:
                by = ", ".join(f"{v.doc.kind} {v.doc.namespace}/{v.doc.name} ({v.gpus})" for v in holders)
                yield Violation(
                    w.doc,
                    "$.metadata.labels",
                    f"needs {w.gpus} {GPU}; {where} {'hold' if len(cohort) > 1 else 'holds'} {quota}"
                    + (f", of which {by} keep {held} it may not preempt" if holders else ""),
                )
            elif len(cohort) > 1 and w.doc.kind in LONG_RUNNING:
                own = sum(v.gpus for v in workloads if v.queue == w.queue and v.doc.kind in LONG_RUNNING)
                if own > _quota(queue):
                    yield Violation(
                        w.doc,
                        "$.metadata.labels",
                        f"ClusterQueue {w.queue}'s long-running work needs {own} {GPU}, its nominal quota is "
                        f"{_quota(queue)}: it borrows, and the queue that lent takes it back by evicting it",
                    )


_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _seconds(duration: str) -> float:
    """A Go duration as Kueue's configuration takes it (`10m`, `1h30m`, `90s`), in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)", duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"{duration!r} is not a Go duration")
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def startup_allowance(container: dict[str, Any]) -> int:
    """How long the kubelet lets a container start before its startup probe fails it (the probe's
    defaults where unset); 0 without one."""
    probe = container.get("startupProbe")
    if not probe:
        return 0
    failures, period = int(probe.get("failureThreshold", 3)), int(probe.get("periodSeconds", 10))
    return int(probe.get("initialDelaySeconds", 0)) + failures * period


@rule(
    "KUE-002",
    "starts-within-pods-ready",
    "a workload Kueue manages that may take longer to start than waitForPodsReady's timeout is evicted "
    "and requeued before it can become Ready, again and again",
)
def _starts_in_time(ctx: Context) -> Iterator[Violation]:
    for docs in ctx.cluster_objects.values():
        found = configuration(d.body for d in docs if d.kind == "ConfigMap")
        wait = dig(found[0], "waitForPodsReady") if found else None
        if found is None or wait is None:
            continue
        config, kueue_namespace = found
        timeout = str(dig(wait, "timeout", default="5m"))  # Kueue's default
        selector = managed_namespaces(config, kueue_namespace)
        managed = {
            d.name for d in docs if d.kind == "Namespace" and label_selector_matches(selector, _labels(d))
        }
        for doc in docs:
            pod = pod_spec(doc) if doc.namespace in managed else None
            if pod is None:
                continue
            path, spec = pod
            for i, container in enumerate(spec.get("containers") or []):
                allowance = startup_allowance(container)
                if allowance > _seconds(timeout):
                    yield Violation(
                        doc,
                        f"{path}.containers[{i}].startupProbe",
                        f"may take {allowance // 60} min to start, Kueue evicts what is not Ready within "
                        f"its waitForPodsReady timeout of {timeout} ({kueue_namespace})",
                    )


def _labels(namespace: Document) -> dict[str, str]:
    """A Namespace's labels as selectors see them: with the name label the API server sets on each."""
    return {
        **(dig(namespace.body, "metadata", "labels") or {}),
        "kubernetes.io/metadata.name": namespace.name,
    }
