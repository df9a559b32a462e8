"""GPU workloads on the rail-optimised fabric: a pod template, and the NCCL all-reduce benchmark job.

`GpuPodTemplate` is what every GPU workload builds on: it states its pool and takes placement from it,
uses the GPU RuntimeClass, requests GPUs plus one RDMA device per rail, attaches the rail networks
through Multus, and sets the NCCL environment for exactly those rails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from constructs import Construct
from constructs.fabric import RDMA_PREFIX, rail_network, rail_resource
from constructs.kueue import PRIORITY_LABEL, QUEUE_LABEL
from constructs.objects import api_object
from sitegen.model import Fabric, ImagePin, PoolLayout

GPU_RESOURCE = "nvidia.com/gpu"
RUNTIME_CLASS = "nvidia"  # created by the GPU Operator; GPU workloads name it
PRIMARY_INTERFACE = "eth0"  # Cilium's pod interface: NCCL bootstrap only, never the data path
SHM_GIB_PER_GPU = 8
WORKLOAD_UID = 10001
# On the pods of GPU batch jobs: the GPU Operator's driver upgrade waits for them to finish before it
# takes their node (tenants' own jobs carry it too, see docs/site.md).
BATCH_LABEL = "sitegen.io/gpu-batch"
# Share of a node's cores and memory a full-node job may request (the rest is for the node's agents).
NODE_SHARE = 0.9


@dataclass(frozen=True)
class GpuPodTemplate:
    """A pod template for `gpus` GPUs of one node of `pool`, on `rails` (default: all rails of the pool)."""

    pool: PoolLayout
    fabric: Fabric
    namespace: str
    image: ImagePin
    gpus: int
    command: list[str]
    rails: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        gpu = self.pool.hardware.gpu
        if gpu is None:
            raise ValueError(f"pool {self.pool.name} has no GPUs")
        if not 1 <= self.gpus <= gpu.count:
            raise ValueError(f"gpus must be 1..{gpu.count} on pool {self.pool.name}, got {self.gpus}")
        unknown = set(self.rails or ()) - set(self.fabric.rails_of(self.pool.name))
        if unknown:
            raise ValueError(f"rails {sorted(unknown)} are not rails of pool {self.pool.name}")

    @property
    def rail_names(self) -> list[str]:
        return list(self.rails) if self.rails is not None else self.fabric.rails_of(self.pool.name)

    @property
    def hcas(self) -> list[str]:
        """The pool's RDMA devices on the chosen rails, in rail order."""
        by_rail = {nic.rail: nic.name for nic in self.fabric.nics[self.pool.name]}
        return [by_rail[r] for r in self.rail_names]

    @property
    def nccl_env(self) -> dict[str, str]:
        env = {"NCCL_SOCKET_IFNAME": "=" + PRIMARY_INTERFACE}
        if self.hcas:
            # `=` makes both exact lists: no other mlx5 port (storage, 100GbE) and no IPoIB interface.
            env = {"NCCL_IB_HCA": "=" + ",".join(self.hcas), **env}
        return env

    def _share(self, total: int) -> int:
        gpu = self.pool.hardware.gpu
        assert gpu is not None
        return int(total * NODE_SHARE * self.gpus / gpu.count)

    def to_dict(self) -> dict[str, Any]:
        extended = {
            GPU_RESOURCE: str(self.gpus),
            **{f"{RDMA_PREFIX}/{rail_resource(r)}": "1" for r in self.rail_names},
        }
        memory = f"{self._share(self.pool.hardware.memory_gb)}G"
        resources = {
            "requests": {"cpu": str(self._share(self.pool.hardware.cpu_cores)), "memory": memory, **extended},
            "limits": {"memory": memory, **extended},
        }
        networks = [
            {"name": rail_network(self.namespace, r), "interface": f"net-{r.lower()}"}
            for r in self.rail_names
        ]
        env = {**self.nccl_env, "HOME": "/tmp", **self.env}
        metadata: dict[str, Any] = {"labels": self.labels}
        if networks:  # a single-node job (one NVLink domain) needs no rail
            metadata["annotations"] = {
                "k8s.v1.cni.cncf.io/networks": json.dumps(networks, separators=(",", ":"))
            }
        return {
            "metadata": metadata,
            "spec": {
                "runtimeClassName": RUNTIME_CLASS,
                # GPU jobs and model servers never call the API server (rendezvous is a headless Service)
                "automountServiceAccountToken": False,
                "nodeSelector": self.pool.placement.node_selector,
                "tolerations": list(self.pool.placement.tolerations),
                "securityContext": {
                    "runAsNonRoot": True,
                    # above any host account (the image's own user is irrelevant: HOME and caches are set)
                    "runAsUser": WORKLOAD_UID,
                    "runAsGroup": WORKLOAD_UID,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [
                    {
                        "name": "worker",
                        "image": self.image.ref,
                        "command": self.command,
                        "env": [{"name": k, "value": v} for k, v in env.items()],
                        "resources": resources,
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            # No IPC_LOCK: an added capability never reaches a non-root process. RDMA
                            # pins memory under the memlock limit, which the host lifts for containerd
                            # and its pods (fabric-prep-<pool>.sh).
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                    }
                ],
                # NCCL's shared-memory transport between the GPUs of a node needs more than 64 MiB.
                "volumes": [
                    {
                        "name": "dshm",
                        "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB_PER_GPU * self.gpus}Gi"},
                    }
                ],
            },
        }


ALLREDUCE_SCRIPT = """\
import os, sys, time
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
size = int(os.environ["BENCH_BYTES"])
iters = int(os.environ["BENCH_ITERS"])
x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(iters):
    dist.all_reduce(x)
torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / iters
busbw = size / seconds * 2 * (world - 1) / world / 1e9
minimum = float(os.environ.get("MIN_BUSBW_GBPS", "0"))
if rank == 0:
    print(f"all_reduce {size} B on {world} GPUs: {seconds * 1e3:.2f} ms, bus bandwidth {busbw:.1f} GB/s", flush=True)
dist.destroy_process_group()
if rank == 0 and busbw < minimum:
    print(f"below the {minimum:.1f} GB/s the fabric promises", flush=True)
    sys.exit(1)
"""


JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
RENDEZVOUS_PORT = 29500


def all_reduce_spec(
    *,
    name: str,
    pool: PoolLayout,
    fabric: Fabric,
    namespace: str,
    image: ImagePin,
    nodes: int,
    env: dict[str, str],
) -> dict[str, Any]:
    """The spec of an Indexed Job running the all-reduce over `nodes` whole nodes (one torchrun a node).
    Pod 0 of a run is the rendezvous, found by the Job's own name under the headless Service `name`, so
    a CronJob's runs work as a Job does, and several Jobs may share one Service."""
    gpu = pool.hardware.gpu
    assert gpu is not None
    labels = {"app.kubernetes.io/name": name}
    template = GpuPodTemplate(
        pool=pool,
        fabric=fabric,
        namespace=namespace,
        image=image,
        gpus=gpu.count,
        labels={**labels, BATCH_LABEL: "true"},
        env={"BENCH_BYTES": str(1 << 30), "BENCH_ITERS": "20", **env},
        command=[
            "torchrun",
            f"--nnodes={nodes}",
            f"--nproc-per-node={gpu.count}",
            "--node-rank=$(JOB_COMPLETION_INDEX)",
            f"--master-addr=$(JOB_NAME)-0.{name}.{namespace}.svc",
            f"--master-port={RENDEZVOUS_PORT}",
            "/opt/bench/allreduce.py",
        ],
    ).to_dict()
    container = template["spec"]["containers"][0]
    container["env"][:0] = [
        {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
            },
        },
        {
            "name": "JOB_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}},
        },
    ]
    container["ports"] = [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}]
    container["volumeMounts"].append({"name": "bench", "mountPath": "/opt/bench", "readOnly": True})
    template["spec"]["volumes"].append({"name": "bench", "configMap": {"name": f"{name}-script"}})
    template["spec"].update({"subdomain": name, "restartPolicy": "Never"})
    return {"completionMode": "Indexed", "completions": nodes, "parallelism": nodes, "template": template}


def all_reduce_rendezvous(scope: Construct, *, name: str, namespace: str) -> None:
    """The benchmark's script (a ConfigMap) and the headless Service `name` its runs rendezvous under."""
    labels = {"app.kubernetes.io/name": name}
    api_object(
        scope, f"{name}-script", "v1", "ConfigMap", {"name": f"{name}-script", "namespace": namespace},
        data={"allreduce.py": ALLREDUCE_SCRIPT},
    )  # fmt: skip
    api_object(
        scope,
        f"{name}-service",
        "v1",
        "Service",
        {"name": name, "namespace": namespace, "labels": labels},
        spec={
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels,
            "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}],
        },
    )


class NcclAllReduceJob(Construct):
    """The acceptance run: an all-reduce over every node of a GPU pool, submitted suspended to Kueue,
    which admits the whole job at once (it unsuspends it when the quota is free)."""

    NAME = "nccl-allreduce"

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
    ) -> None:
        super().__init__(scope, id)
        name = self.NAME
        all_reduce_rendezvous(self, name=name, namespace=namespace)
        job = all_reduce_spec(
            name=name, pool=pool, fabric=fabric, namespace=namespace, image=image,
            nodes=len(pool.hosts), env={"NCCL_DEBUG": "INFO"},
        )  # fmt: skip
        api_object(
            self,
            "Job",
            "batch/v1",
            "Job",
            {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": name, QUEUE_LABEL: queue, PRIORITY_LABEL: "acceptance"},
            },
            spec={"suspend": True, "backoffLimit": 0, **job},
        )
