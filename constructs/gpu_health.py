"""Periodic health checks of the GPU pool, queued in Kueue at the lowest priority: they run only on
idle GPUs and any other work preempts them.

- an NCCL all-reduce over a few whole nodes: a run whose bus bandwidth falls below the promised share
  of the nodes' NDR bandwidth fails (and alerts);
- DCGM diagnostics (`dcgmi diag`) on one whole node: a failed test fails the run (and alerts).
"""

from __future__ import annotations

from cdk8s import JsonPatch

from constructs import Construct
from constructs.gpu_workload import BATCH_LABEL, GpuPodTemplate, all_reduce_run
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
        job = all_reduce_run(
            self, name=NCCL, pool=pool, fabric=fabric, namespace=namespace, image=image, nodes=nodes,
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
        gpu = pool.hardware.gpu
        assert gpu is not None
        template = GpuPodTemplate(
            pool=pool,
            fabric=fabric,
            namespace=namespace,
            image=image,
            gpus=gpu.count,
            rails=(),  # one node: no fabric
            labels={"app.kubernetes.io/name": DCGM, BATCH_LABEL: "true"},
            env={"LEVEL": str(level)},
            command=["/bin/sh", "-c", DCGM_SCRIPT],
        ).to_dict()
        template["spec"]["restartPolicy"] = "Never"
        cron_job(
            self, "CronJob", {"name": DCGM, "namespace": namespace}, schedule=schedule,
            job={**RUN, "template": template}, job_labels=_queued(queue),
        )  # fmt: skip


BURN_IN = "burn-in"
# A cordoned node takes only pods that tolerate its cordon: the burn-in's, nobody's work.
CORDON_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}


def burn_in_name(host: str) -> str:
    return f"{BURN_IN}-{host}"


class BurnIn(Construct):
    """A new GPU node's burn-in before it takes any work: `dcgmi diag` at `level` (3: the long
    stress and memory tests) on all its GPUs, pinned to that node while it is cordoned. One suspended
    CronJob per host, never scheduled: the RUNBOOK makes a Job of it (`kubectl create job --from`) when
    the node joins or comes back repaired, outside Kueue (a cordoned node holds no tenant work to
    preempt)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pool: PoolLayout,
        fabric: Fabric,
        namespace: str,
        image: ImagePin,
        level: int,
    ) -> None:
        super().__init__(scope, id)
        gpu = pool.hardware.gpu
        assert gpu is not None
        for host in pool.hosts:
            template = GpuPodTemplate(
                pool=pool, fabric=fabric, namespace=namespace, image=image, gpus=gpu.count, rails=(),
                labels={"app.kubernetes.io/name": BURN_IN, BATCH_LABEL: "true"},
                env={"LEVEL": str(level)}, command=["/bin/sh", "-c", DCGM_SCRIPT],
            ).to_dict()  # fmt: skip
            spec = template["spec"]
            spec["restartPolicy"] = "Never"
            spec["affinity"] = {**spec.get("affinity", {}), "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [host.name]}
                ]}]}
            }}  # fmt: skip
            spec["tolerations"] = [*spec["tolerations"], CORDON_TOLERATION]
            # a read-only root: nv-hostengine's pid file, log and home go to a scratch /tmp
            (container,) = spec["containers"]
            container["securityContext"] = {**container["securityContext"], "readOnlyRootFilesystem": True}
            container["volumeMounts"] = [*container["volumeMounts"], {"name": "tmp", "mountPath": "/tmp"}]
            spec["volumes"] = [*spec["volumes"], {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}]
            cron_job(
                self, f"CronJob-{host.name}", {"name": burn_in_name(host.name), "namespace": namespace},
                schedule="0 0 1 1 *",  # never: it is suspended, a template for the RUNBOOK's Jobs
                job={"backoffLimit": 0, "activeDeadlineSeconds": 4 * 3600, "template": template},
            ).add_json_patch(JsonPatch.add("/spec/suspend", True))  # fmt: skip
