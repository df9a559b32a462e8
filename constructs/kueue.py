"""Kueue objects of the GPU pools: a ResourceFlavor per GPU pool, the shared ClusterQueue and one per
tenants' cohort, a LocalQueue per tenant with its fair-share weight.

Quotas are computed from the site model: the pool's GPUs, cores, memory and rail devices. A workload
is admitted only if every resource it requests is covered, so the rails are covered too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata

from constructs import Construct
from constructs.edge import NAMESPACE_NAME_LABEL
from constructs.fabric import RDMA_HCA_MAX, RDMA_PREFIX, rail_resource
from constructs.objects import api_object
from imports.io.x_k8s import kueue
from sitegen.model import Fabric, PoolLayout
from sitegen.model.capacity import Capacity

KUEUE = "kueue.x-k8s.io/v1beta2"
GPU_RESOURCE = "nvidia.com/gpu"
CLUSTER_QUEUE = "gpu"
COHORT = "gpu-pools"  # the Kueue cohort of the GPU ClusterQueues, when tenants form cohorts
# With cohorts, the queue of work that runs on idle GPUs only (the health checks): no nominal quota,
# so it only borrows, never reclaims, and any queue takes its GPUs back.
IDLE_QUEUE = "gpu-idle"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Kueue manages (and its webhooks intercept) workloads only in namespaces with this label: a Kueue
# outage then stops the tenants' batch work, not every Deployment of the site, and the platform's
# own apps never wait for Kueue's webhook at bring-up.
MANAGED_NAMESPACE_LABEL = "sitegen.io/kueue-managed"
# A tenant namespace's priority (tenants.yaml): which of the classes below its own workloads may carry.
TENANT_PRIORITY_LABEL = "sitegen.io/tenant-priority"
# Who may take GPUs from whom in the ClusterQueue (a workload preempts only lower values). The
# acceptance benchmark needs every GPU of the pool, so it preempts serving while it runs (it is
# started on purpose, at bring-up and after maintenance); serving then comes back. Training and
# other batch work carry no class (0) and wait, unless their tenant's priority (tenants.yaml) lets them
# carry `high` or makes them carry `low`.
PRIORITIES = {
    "acceptance": (1000, "fabric acceptance (the NCCL all-reduce over every GPU node): preempts serving"),
    "serving": (500, "model servers: preempt batch work, yield to acceptance runs"),
    "high": (100, "a tenant's urgent work (tenants whose priority is high): before unlabelled batch work"),
    "low": (-50, "work of tenants whose priority is low: after everyone's unlabelled batch work"),
    "health": (-100, "periodic fabric and GPU checks: run on idle GPUs only, any other work preempts them"),
}


# Per tenant priority: the classes its workloads may carry, and whether one may carry none (0).
TENANT_CLASSES = {
    "low": (("low", "health"), False),
    "normal": (("low", "health"), True),
    "high": (("high", "low", "health"), True),
}


def _object(scope: Construct, kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> ApiObject:
    return api_object(scope, "Resource", KUEUE, kind, metadata, spec=spec)


def flavor_name(pool: PoolLayout) -> str:
    assert pool.hardware.gpu is not None
    return pool.hardware.gpu.model.removeprefix("nvidia-")


def pool_quota(pool: PoolLayout, fabric: Fabric, nodes: int | None = None) -> dict[str, Any]:
    """Nominal quota of `nodes` of a GPU pool (all of them unless given) per resource (ordered: cpu,
    memory, GPUs, rails)."""
    assert pool.hardware.gpu is not None
    held = pool.capacity if nodes is None else Capacity.of(pool.hardware, nodes)
    quota: dict[str, Any] = {"cpu": held.cpu_cores, "memory": f"{held.memory_gb}G", GPU_RESOURCE: held.gpus}
    for rail in fabric.rails_of(pool.name):
        quota[f"{RDMA_PREFIX}/{rail_resource(rail)}"] = held.nodes * RDMA_HCA_MAX
    return quota


def gpu_queue_resources(pools: list[PoolLayout], fabric: Fabric) -> list[str]:
    """The resources the GPU ClusterQueues cover, in their order: cpu, memory, GPUs, the rails."""
    covered: list[str] = []
    for pool in pools:
        covered += [r for r in pool_quota(pool, fabric) if r not in covered]
    return covered


def cohort_queue(cohort: str) -> str:
    return f"{CLUSTER_QUEUE}-{cohort}"


@dataclass(frozen=True)
class QueueShare:
    """A GPU ClusterQueue and the whole nodes of each GPU pool its nominal quota holds."""

    name: str
    nodes: dict[str, int]  # pool -> nodes
    namespaces: tuple[str, ...] | None = None  # the tenants it admits from; None: every namespace


class GpuQueues(Construct):
    """The GPU pools' ResourceFlavors and ClusterQueues: the shared `gpu` and one per cohort. With
    cohorts, every GPU ClusterQueue joins the Kueue cohort `gpu-pools`: what one leaves idle another
    borrows, and a queue short of its nominal quota takes it back by preempting borrowers
    (reclaimWithinCohort) while a borrower never preempts (borrowWithinCohort unset)."""

    def __init__(
        self, scope: Construct, id: str, *, pools: list[PoolLayout], fabric: Fabric, shares: list[QueueShare]
    ) -> None:
        super().__init__(scope, id)
        covered = gpu_queue_resources(pools, fabric)
        for pool in pools:
            _object(
                Construct(self, f"Flavor-{pool.name}"),
                "ResourceFlavor",
                {"name": flavor_name(pool)},
                {"nodeLabels": pool.placement.node_selector, "tolerations": list(pool.placement.tolerations)},
            )
        for share in shares:
            self._cluster_queue(share, pools, fabric, covered, cohort=len(shares) > 1)
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

    def _cluster_queue(
        self, share: QueueShare, pools: list[PoolLayout], fabric: Fabric, covered: list[str], *, cohort: bool
    ) -> None:
        flavors = []
        for pool in pools:
            quota = pool_quota(pool, fabric, share.nodes.get(pool.name, 0))
            # every flavor of a group lists the group's resources: its pool's, then the others' at 0
            resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
            resources += [{"name": r, "nominalQuota": 0} for r in covered if r not in quota]
            flavors.append({"name": flavor_name(pool), "resources": resources})
        # the namespaces Kueue manages, whose label only the applier may set (namespace-confinement):
        # a LocalQueue elsewhere (a namespace of a platform app, one made by hand) submits nothing
        selector: dict[str, Any] = {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}}
        if share.namespaces is not None:
            selector["matchExpressions"] = [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(share.namespaces)}
            ]
        preemption = {"withinClusterQueue": "LowerPriority"}
        if cohort:
            preemption["reclaimWithinCohort"] = "Any"
        queue = Construct(
            self, "ClusterQueue" if share.name == CLUSTER_QUEUE else f"ClusterQueue-{share.name}"
        )
        _object(
            queue,
            "ClusterQueue",
            {"name": share.name},
            {
                **({"cohortName": COHORT} if cohort else {}),
                "namespaceSelector": selector,
                "queueingStrategy": "BestEffortFIFO",
                "preemption": preemption,
                # the tenants' LocalQueues take turns by their recent usage over their weight
                # (Kueue's admission fair sharing; its configuration sets the usage's half-life)
                "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
                "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            },
        )


class TenantQueue(Construct):
    """A tenant's LocalQueue, typed by the class `cdk8s import` generated from the Kueue CRD (v1beta2)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tenant: str,
        fair_share: int = 1,
        cluster_queue: str = CLUSTER_QUEUE,
    ) -> None:
        super().__init__(scope, id)
        kueue.LocalQueueV1Beta2(
            self,
            "Resource",
            metadata=ApiObjectMetadata(name=tenant, namespace=tenant),
            spec=kueue.LocalQueueV1Beta2Spec(
                cluster_queue=cluster_queue,
                fair_sharing=kueue.LocalQueueV1Beta2SpecFairSharing(
                    weight=kueue.LocalQueueV1Beta2SpecFairSharingWeight.from_number(fair_share)
                ),
            ),
        )
