"""Kueue objects of the GPU pool: a ResourceFlavor per GPU pool, one ClusterQueue, a LocalQueue per tenant
with its fair-share weight.

Quotas are computed from the site model: the pool's GPUs, cores, memory and rail devices. A workload
is admitted only if every resource it requests is covered, so the rails are covered too.
"""

from __future__ import annotations

from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata

from constructs import Construct
from constructs.fabric import RDMA_HCA_MAX, RDMA_PREFIX, rail_resource
from constructs.objects import api_object
from imports.io.x_k8s import kueue
from sitegen.model import Fabric, PoolLayout

KUEUE = "kueue.x-k8s.io/v1beta2"
GPU_RESOURCE = "nvidia.com/gpu"
CLUSTER_QUEUE = "gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Kueue manages (and its webhooks intercept) workloads only in namespaces with this label: a Kueue
# outage then stops the tenants' batch work, not every Deployment of the site, and the platform's
# own apps never wait for Kueue's webhook at bring-up.
MANAGED_NAMESPACE_LABEL = "sitegen.io/kueue-managed"
# Who may take GPUs from whom in the ClusterQueue (a workload preempts only lower values). The
# acceptance benchmark needs every GPU of the pool, so it preempts serving while it runs (it is
# started on purpose, at bring-up and after maintenance); serving then comes back. Training and
# other batch work carry no class (0) and wait.
PRIORITIES = {
    "acceptance": (1000, "fabric acceptance (the NCCL all-reduce over every GPU node): preempts serving"),
    "serving": (500, "model servers: preempt batch work, yield to acceptance runs"),
    "health": (-100, "periodic fabric and GPU checks: run on idle GPUs only, any other work preempts them"),
}


def _object(scope: Construct, kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> ApiObject:
    return api_object(scope, "Resource", KUEUE, kind, metadata, spec=spec)


def flavor_name(pool: PoolLayout) -> str:
    assert pool.hardware.gpu is not None
    return pool.hardware.gpu.model.removeprefix("nvidia-")


def pool_quota(pool: PoolLayout, fabric: Fabric) -> dict[str, Any]:
    """Nominal quota of a GPU pool per resource (ordered: cpu, memory, GPUs, rails)."""
    gpu = pool.hardware.gpu
    assert gpu is not None
    nodes = len(pool.hosts)
    quota: dict[str, Any] = {
        "cpu": nodes * pool.hardware.cpu_cores,
        "memory": f"{nodes * pool.hardware.memory_gb}G",
        GPU_RESOURCE: nodes * gpu.count,
    }
    for rail in fabric.rails_of(pool.name):
        quota[f"{RDMA_PREFIX}/{rail_resource(rail)}"] = nodes * RDMA_HCA_MAX
    return quota


def gpu_queue_resources(pools: list[PoolLayout], fabric: Fabric) -> list[str]:
    """The resources the GPU ClusterQueue covers, in its order: cpu, memory, GPUs, the rails."""
    covered: list[str] = []
    for pool in pools:
        covered += [r for r in pool_quota(pool, fabric) if r not in covered]
    return covered


class GpuQueues(Construct):
    def __init__(self, scope: Construct, id: str, *, pools: list[PoolLayout], fabric: Fabric) -> None:
        super().__init__(scope, id)
        flavors = []
        covered: list[str] = []
        for pool in pools:
            flavor = Construct(self, f"Flavor-{pool.name}")
            _object(
                flavor,
                "ResourceFlavor",
                {"name": flavor_name(pool)},
                {"nodeLabels": pool.placement.node_selector, "tolerations": list(pool.placement.tolerations)},
            )
            quota = pool_quota(pool, fabric)
            covered += [r for r in quota if r not in covered]
            flavors.append(
                {
                    "name": flavor_name(pool),
                    "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                }
            )
        for f in flavors:  # every flavor of a group must list the group's resources
            have = {r["name"] for r in f["resources"]}
            f["resources"] += [{"name": r, "nominalQuota": 0} for r in covered if r not in have]
        queue = Construct(self, "ClusterQueue")
        _object(
            queue,
            "ClusterQueue",
            {"name": CLUSTER_QUEUE},
            {
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "preemption": {"withinClusterQueue": "LowerPriority"},
                # the tenants' LocalQueues take turns by their recent usage over their weight
                # (Kueue's admission fair sharing; its configuration sets the usage's half-life)
                "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
                "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            },
        )
        for name, (value, why) in PRIORITIES.items():
            api_object(
                Construct(self, f"Priority-{name}"),
                "Resource",
                KUEUE,
                "WorkloadPriorityClass",
                {"name": name},
                value=value,
                description=why,
            )


class TenantQueue(Construct):
    """A tenant's LocalQueue, typed by the class `cdk8s import` generated from the Kueue CRD (v1beta2)."""

    def __init__(self, scope: Construct, id: str, *, tenant: str, fair_share: int = 1) -> None:
        super().__init__(scope, id)
        kueue.LocalQueueV1Beta2(
            self,
            "Resource",
            metadata=ApiObjectMetadata(name=tenant, namespace=tenant),
            spec=kueue.LocalQueueV1Beta2Spec(
                cluster_queue=CLUSTER_QUEUE,
                fair_sharing=kueue.LocalQueueV1Beta2SpecFairSharing(
                    weight=kueue.LocalQueueV1Beta2SpecFairSharingWeight.from_number(fair_share)
                ),
            ),
        )
