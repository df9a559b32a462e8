"""Periodic health checks of the GPU pool, queued in Kueue at the lowest priority: they run only on
idle GPUs and any other work preempts them.

- an NCCL all-reduce over a few whole nodes: a run whose bus bandwidth falls below the promised share
  of the nodes' NDR bandwidth fails (and alerts);
- DCGM diagnostics (`dcgmi diag`) on one whole node: a failed test fails the run (and alerts).
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.gpu_workload import ALLREDUCE_SCRIPT, BATCH_LABEL, GpuPodTemplate
from constructs.kueue import PRIORITY_LABEL, QUEUE_LABEL
from constructs.objects import api_object
from sitegen.model import Fabric, ImagePin, PoolLayout

NCCL = "nccl-health"
DCGM = "dcgm-health"
PORT = 29500
PRIORITY = "health"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"

# nv-hostengine in the pod (not the node's), then the diagnostic against it
DCGM_SCRIPT = """\
set -eu
nv-hostengine -n -b 127.0.0.1 &
sleep 5
dcgmi diag -r "$LEVEL"
"""


def _cron_job(
    scope: Construct, name: str, namespace: str, schedule: str, queue: str, job: dict[str, Any]
) -> None:
    api_object(
        scope,
        f"{name}-cron",
        "batch/v1",
        "CronJob",
        {"name": name, "namespace": namespace},
        spec={
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": {QUEUE_LABEL: queue, PRIORITY_LABEL: PRIORITY}},
                "spec": {"suspend": True, "backoffLimit": 0, "activeDeadlineSeconds": 3600, **job},
            },
        },
    )


class NcclHealthCheck(Construct):
    """An Indexed Job per run over `nodes` whole nodes; pod 0 of the run is the rendezvous."""

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
        gpu = pool.hardware.gpu
        assert gpu is not None
        labels = {"app.kubernetes.io/name": NCCL}
        template = GpuPodTemplate(
            pool=pool,
            fabric=fabric,
            namespace=namespace,
            image=image,
            gpus=gpu.count,
            labels={**labels, BATCH_LABEL: "true"},
            env={"BENCH_BYTES": str(1 << 30), "BENCH_ITERS": "20", "MIN_BUSBW_GBPS": f"{min_busbw_gbps:.1f}"},
            command=[
                "torchrun",
                f"--nnodes={nodes}",
                f"--nproc-per-node={gpu.count}",
                "--node-rank=$(JOB_COMPLETION_INDEX)",
                f"--master-addr=$(JOB_NAME)-0.{NCCL}.{namespace}.svc",
                f"--master-port={PORT}",
                "/opt/bench/allreduce.py",
            ],
        ).to_dict()
        container = template["spec"]["containers"][0]
        container["env"][:0] = [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    }
                },
            },
            {
                "name": "JOB_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}},
            },
        ]
        container["ports"] = [{"name": "rendezvous", "containerPort": PORT}]
        container["volumeMounts"].append({"name": "bench", "mountPath": "/opt/bench", "readOnly": True})
        template["spec"]["volumes"].append({"name": "bench", "configMap": {"name": f"{NCCL}-script"}})
        template["spec"].update({"subdomain": NCCL, "restartPolicy": "Never"})
        api_object(
            self, "Script", "v1", "ConfigMap", {"name": f"{NCCL}-script", "namespace": namespace},
            data={"allreduce.py": ALLREDUCE_SCRIPT},
        )  # fmt: skip
        api_object(
            self,
            "Service",
            "v1",
            "Service",
            {"name": NCCL, "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": labels,
                "ports": [{"name": "rendezvous", "port": PORT, "targetPort": PORT}],
            },
        )
        _cron_job(
            self, NCCL, namespace, schedule, queue,
            {"completionMode": "Indexed", "completions": nodes, "parallelism": nodes, "template": template},
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
        _cron_job(self, DCGM, namespace, schedule, queue, {"template": template})
