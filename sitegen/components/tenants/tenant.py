"""`tenant-<name>`: a tenant's namespace (with its ResourceQuota, from `namespaces`), its Kueue
LocalQueue, its rail networks (the `fabric` app) and, where config asks, the multi-node NCCL
all-reduce benchmark."""

from __future__ import annotations

from constructs import Construct
from constructs.gpu_workload import NcclAllReduceJob
from constructs.kueue import GPU_RESOURCE, TenantQueue
from constructs.namespaces import Quota
from sitegen.components.base import Component, Flow, Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.gateway import Gateway
from sitegen.components.gpu import gpu_job_tolerations
from sitegen.components.gpu.gpu_queues import GpuQueues
from sitegen.components.storage.aistor import AIStor
from sitegen.components.tenants import PROJECT


class Tenant(RenderedComponent):
    name = "tenant"
    project = PROJECT
    layer = Layer.TENANTS
    skip_dry_run = True
    security = NamespaceSecurity("baseline", "tenant workloads, GPU pods included: none is exempt")
    queued = True
    images = {"nvidia-pytorch": "the NCCL all-reduce benchmark"}
    after = (GpuQueues,)

    talks_to_api = False

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(Gateway, (), "the site's public routes (the model API among them)"),
            Flow(AIStor, (), "S3"),
        ]

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.name = f"tenant-{tenant}"
        self.namespace = tenant

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        return [cls(name) for name in scope.site.tenants] if scope.has_gpus else []

    def allowed_tolerations(self, ctx: ClusterContext) -> list[dict[str, str]]:
        return gpu_job_tolerations(ctx)

    def namespace_quota(self, ctx: ClusterContext) -> Quota:
        """Config's, or the capacity of the GPU pools for what config leaves out."""
        quota = ctx.site.tenants[self.tenant].quota
        pools = ctx.gpu_pools
        return Quota(
            cpu=quota.cpu or sum(len(p.hosts) * p.hardware.cpu_cores for p in pools),
            memory_gb=quota.memory_gb or sum(len(p.hosts) * p.hardware.memory_gb for p in pools),
            gpus=quota.gpus or sum(len(p.hosts) * p.hardware.gpu.count for p in pools if p.hardware.gpu),
            gpu_resource=GPU_RESOURCE,
            storage_gb=quota.storage_gb,
            volumes=quota.volumes,
        )

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        TenantQueue(scope, "Queue", tenant=self.tenant)
        if ctx.site.tenants[self.tenant].nccl_benchmark:
            NcclAllReduceJob(
                scope,
                "NcclAllReduce",
                pool=ctx.gpu_pools[0],
                fabric=ctx.site.fabric,
                namespace=self.tenant,
                queue=self.tenant,
                image=ctx.image("nvidia-pytorch"),
            )
