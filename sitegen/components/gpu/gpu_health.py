"""`gpu-health`: the periodic NCCL all-reduce and DCGM diagnostics of the GPU pool (see
constructs/gpu_health.py), in a namespace of their own queued in Kueue at the lowest priority."""

from __future__ import annotations

from constructs import Construct
from constructs.gpu_health import CORDON_TOLERATION, BurnIn, DcgmHealthCheck, NcclHealthCheck
from constructs.kueue import TenantQueue
from constructs.site_watches import HealthWatch, Watch
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT, gpu_job_tolerations
from sitegen.components.gpu.gpu_queues import GpuQueues, idle_work_queue
from sitegen.model import Site


class GpuHealth(RenderedComponent):
    name = "gpu-health"
    project = PROJECT
    layer = Layer.TENANTS
    namespace = "gpu-health"
    security = NamespaceSecurity("baseline", "GPU pods, none exempt (as the tenants')")
    queued = True
    skip_dry_run = True  # Kueue's LocalQueue
    images = {
        "nvidia-pytorch": "the NCCL all-reduce health check and burn-in pairs",
        "dcgm": "the DCGM diagnostics and burn-in",
    }
    after = (GpuQueues,)
    talks_to_api = False

    @staticmethod
    def expected_busbw_gbps(site: Site, pool: str) -> float:
        """A GPU node's NDR bandwidth in GB/s (rails x link): the bound of a multi-node all-reduce's bus
        bandwidth, whose bottleneck is the network between the nodes."""
        return len(site.fabric.rails_of(pool)) * site.fabric.link_gbps / 8

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [HealthWatch(self.namespace, scope.site.services.health.max_age_days)]

    def allowed_tolerations(self, ctx: ClusterContext) -> list[dict[str, str]]:
        # the burn-in runs on its node while the node is cordoned
        return [*gpu_job_tolerations(ctx), CORDON_TOLERATION]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        health = ctx.site.services.health
        pool = ctx.gpu_pools[0]
        TenantQueue(scope, "Queue", tenant=self.namespace, cluster_queue=idle_work_queue(ctx.site))
        NcclHealthCheck(
            scope,
            "Nccl",
            pool=pool,
            fabric=ctx.site.fabric,
            namespace=self.namespace,
            queue=self.namespace,
            image=ctx.image("nvidia-pytorch"),
            schedule=health.nccl.schedule,
            nodes=min(health.nccl.nodes, len(pool.hosts)),
            min_busbw_gbps=GpuHealth.expected_busbw_gbps(ctx.site, pool.name) * health.nccl.min_fraction,
        )
        DcgmHealthCheck(
            scope,
            "Dcgm",
            pool=pool,
            fabric=ctx.site.fabric,
            namespace=self.namespace,
            queue=self.namespace,
            image=ctx.image("dcgm"),
            schedule=health.dcgm.schedule,
            level=health.dcgm.level,
        )
        for gpu_pool in ctx.gpu_pools:
            BurnIn(
                scope, f"BurnIn-{gpu_pool.name}", pool=gpu_pool, fabric=ctx.site.fabric,
                namespace=self.namespace, dcgm_image=ctx.image("dcgm"), nccl_image=ctx.image("nvidia-pytorch"),
                level=health.burn_in_level, queue=self.namespace,
                min_busbw_gbps=GpuHealth.expected_busbw_gbps(ctx.site, gpu_pool.name) * health.nccl.min_fraction,
            )  # fmt: skip
