"""Periodic health checks of the GPU pool, queued in Kueue at the lowest priority: they run only on
idle GPUs and any other work preempts them.

- an NCCL all-reduce over a few whole nodes: a run whose bus bandwidth falls below the promised share
  of the nodes' NDR bandwidth fails (and alerts);
- DCGM diagnostics (`dcgmi diag`) on one whole node: a failed test fails the run (and alerts).
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.gpu_workload import (
    BATCH_LABEL,
    GpuPodTemplate,
    all_reduce_rendezvous,
    all_reduce_spec,
)
from constructs.kueue import PRIORITY_LABEL, QUEUE_LABEL
from constructs.objects import cron_job
from sitegen.model import Fabric, ImagePin, PoolLayout

NCCL = "nccl-health"
DCGM = "dcgm-health"
PRIORITY = "health"

# nv-hostengine in the pod (not the node's), then the diagnostic against it. The pod runs as the GPU
# workloads' user: the engine's pid file, log and home go to /tmp (its defaults are root's).
DCGM_SCRIPT = """\
set -eu
nv-hostengine --no-daemon --bind-interface 127.0.0.1 --pid /tmp/nv-hostengine.pid \\
  --log-filename /tmp/nv-hostengine.log --home-dir /tmp &
sleep 5
dcgmi diag -r "$LEVEL"
"""


# Suspended for Kueue, never retried (a failed check is the result), cut after an hour.
RUN = {"suspend": True, "backoffLimit": 0, "activeDeadlineSeconds": 3600}


def _queued(queue: str) -> dict[str, str]:
    return {QUEUE_LABEL: queue, PRIORITY_LABEL: PRIORITY}


def dcgm_pod(
    pool: PoolLayout, fabric: Fabric, namespace: str, image: ImagePin, level: int, *, name: str
) -> dict[str, Any]:
    """`dcgmi diag -r <level>` on every GPU of one node (no fabric: no rail)."""
    gpu = pool.hardware.gpu
    assert gpu is not None
    return GpuPodTemplate(
        pool=pool, fabric=fabric, namespace=namespace, image=image, gpus=gpu.count, rails=(),
        labels={"app.kubernetes.io/name": name, BATCH_LABEL: "true"},
        env={"LEVEL": str(level)}, command=["/bin/sh", "-c", DCGM_SCRIPT],
    ).to_dict()  # fmt: skip


class NcclHealthCheck(Construct):
    """An all-reduce over `nodes` whole nodes per run, failing below `min_busbw_gbps`."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pool: PoolLayout,
        fabric: Fabric,
        namespace: str,
        queue: str,
        image: ImagePin,
        schedule: str,
        nodes: int,
        min_busbw_gbps: float,
    ) -> None:
        super().__init__(scope, id)
        all_reduce_rendezvous(self, name=NCCL, namespace=namespace)
        job = all_reduce_spec(
            name=NCCL, pool=pool, fabric=fabric, namespace=namespace, image=image, nodes=nodes,
            env={"MIN_BUSBW_GBPS": f"{min_busbw_gbps:.1f}"},
        )  # fmt: skip
        cron_job(
            self, "CronJob", {"name": NCCL, "namespace": namespace}, schedule=schedule,
            job={**RUN, **job}, job_labels=_queued(queue),
        )  # fmt: skip


class DcgmHealthCheck(Construct):
    """`dcgmi diag` on every GPU of one node."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pool: PoolLayout,
        fabric: Fabric,
        namespace: str,
        queue: str,
        image: ImagePin,
        schedule: str,
        level: int,
    ) -> None:
        super().__init__(scope, id)
        template = dcgm_pod(pool, fabric, namespace, image, level, name=DCGM)
        template["spec"]["restartPolicy"] = "Never"
        cron_job(
            self, "CronJob", {"name": DCGM, "namespace": namespace}, schedule=schedule,
            job={**RUN, "template": template}, job_labels=_queued(queue),
        )  # fmt: skip


BURN_IN = "burn-in"
PAIR = "nccl-pair"
# A cordoned node takes only pods that tolerate its cordon: the burn-in's, nobody's work.
CORDON_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
NEVER = "0 0 1 1 *"  # the schedule of a suspended CronJob kept as a template for the RUNBOOK's Jobs


def burn_in_name(host: str) -> str:
    return f"{BURN_IN}-{host}"


def pair_name(host: str, peer: str) -> str:
    return f"{PAIR}-{host}-{peer}"


def pair_rounds(hosts: list[str]) -> list[list[tuple[str, str]]]:
    """The hosts as a ring, each paired with the host before and the one after it, in rounds of pairs
    that share no host: two pairs waiting for the same node at once could each hold the other's
    second node (12 pairs started together may all wait forever). Every host is in two pairs, so a
    node whose both pairs fall short is the slow one, and one with a good pair is not."""
    n = len(hosts)
    if n < 3:
        return [[(hosts[0], hosts[1])]] if n == 2 else []
    ring = [(hosts[i], hosts[(i + 1) % n]) for i in range(n)]
    even = n - n % 2  # an odd ring's closing pair shares a host with both rounds
    rounds = [ring[0:even:2], ring[1:even:2]]
    return [*rounds, ring[even:]] if n % 2 else rounds


def _burn_in_job(template: dict[str, Any], hosts: list[str], hours: int) -> dict[str, Any]:
    """A burn-in Job's spec: its pods pinned to `hosts`, tolerating their cordon, with a read-only root
    and a scratch /tmp (where nv-hostengine and PyTorch write), never retried, cut after `hours`."""
    spec = template["spec"]
    spec["restartPolicy"] = "Never"
    spec["affinity"] = {**spec.get("affinity", {}), "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}
        ]}]}
    }}  # fmt: skip
    spec["tolerations"] = [*spec["tolerations"], CORDON_TOLERATION]
    (container,) = spec["containers"]
    container["securityContext"] = {**container["securityContext"], "readOnlyRootFilesystem": True}
    container["volumeMounts"] = [*container["volumeMounts"], {"name": "tmp", "mountPath": "/tmp"}]
    spec["volumes"] = [*spec["volumes"], {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}]
    return {"backoffLimit": 0, "activeDeadlineSeconds": hours * 3600, "template": template}


def _template_cron_job(
    scope: Construct, id: str, name: str, namespace: str, job: dict[str, Any], queue: str
) -> None:
    cron_job(
        scope, id, {"name": name, "namespace": namespace}, schedule=NEVER, job=job, job_labels=_queued(queue),
        suspend=True,
    )  # fmt: skip


class BurnIn(Construct):
    """A new GPU node's burn-in before it takes any work, pinned to it while it is cordoned, queued in
    Kueue like the periodic checks: its GPUs, and a pair test's in-service neighbour's, count against
    the pool's quota, so Kueue never admits a tenant job onto GPUs a burn-in holds (its pods would then
    miss waitForPodsReady). Per host, two suspended CronJobs, never scheduled, that the RUNBOOK makes
    Jobs of (`kubectl create job --from`) when a node joins or comes back repaired:

    - `burn-in-<host>`: `dcgmi diag` at `level` (3: the long stress and memory tests) on all its GPUs;
    - `nccl-pair-<host>-<next>`: an all-reduce with the next host of the pool's ring (`pair_rounds`),
      failing below `min_busbw_gbps`: each node's own fabric bandwidth, measured twice (with the host
      before it and the one after), where the pool-wide check gives one figure for all.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pool: PoolLayout,
        fabric: Fabric,
        namespace: str,
        dcgm_image: ImagePin,
        nccl_image: ImagePin,
        level: int,
        min_busbw_gbps: float,
        queue: str,
    ) -> None:
        super().__init__(scope, id)
        for host in pool.hosts:
            template = dcgm_pod(pool, fabric, namespace, dcgm_image, level, name=BURN_IN)
            job = _burn_in_job(template, [host.name], hours=4)
            _template_cron_job(self, f"CronJob-{host.name}", burn_in_name(host.name), namespace, job, queue)
        pairs = [pair for round_ in pair_rounds([h.name for h in pool.hosts]) for pair in round_]
        if pairs:
            all_reduce_rendezvous(self, name=PAIR, namespace=namespace)
        for host, peer in pairs:
            spec = all_reduce_spec(
                name=PAIR, pool=pool, fabric=fabric, namespace=namespace, image=nccl_image, nodes=2,
                env={"MIN_BUSBW_GBPS": f"{min_busbw_gbps:.1f}"},
            )  # fmt: skip
            job = {**spec, **_burn_in_job(spec["template"], [host, peer], hours=1)}
            _template_cron_job(self, f"Pair-{host}-{peer}", pair_name(host, peer), namespace, job, queue)
