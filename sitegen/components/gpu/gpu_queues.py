"""`gpu-queues`: Kueue's ResourceFlavors and the ClusterQueues of the GPU pools, quotas from the model:
one per tenants' cohort (its tenants' GPUs in whole nodes) and the shared `gpu` with the rest."""

from __future__ import annotations

from constructs import Construct
from constructs.kueue import CLUSTER_QUEUE, IDLE_QUEUE, QueueShare, cohort_queue
from constructs.kueue import GpuQueues as QueueObjects
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT
from sitegen.components.gpu.kueue import Kueue
from sitegen.model import Site
from sitegen.model.tenants import cohort_gpus, cohort_nodes


class GpuQueues(RenderedComponent):
    name = "gpu-queues"
    project = PROJECT
    layer = Layer.RESOURCES
    skip_dry_run = True
    after = (Kueue,)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        QueueObjects(scope, "Queues", pools=ctx.gpu_pools, fabric=ctx.site.fabric, shares=queue_shares(ctx))


def idle_work_queue(site: Site) -> str:
    """The ClusterQueue of work that takes only idle GPUs (the health checks)."""
    return IDLE_QUEUE if cohort_gpus(site.tenants) else CLUSTER_QUEUE


def queue_shares(ctx: ClusterContext) -> list[QueueShare]:
    """The shared queue first, then the cohorts' in name order, then (with cohorts) the idle work's."""
    tenants = ctx.site.tenants
    pools = ctx.gpu_pools
    cohorts = cohort_nodes(
        tenants, [(p.name, len(p.hosts), p.hardware.gpu.count) for p in pools if p.hardware.gpu]
    )
    left = {p.name: len(p.hosts) - sum(c.get(p.name, 0) for c in cohorts.values()) for p in pools}
    shares = [QueueShare(CLUSTER_QUEUE, left)] + [
        QueueShare(cohort_queue(c), nodes, tuple(sorted(t for t, s in tenants.items() if s.cohort == c)))
        for c, nodes in cohorts.items()
    ]
    if idle_work_queue(ctx.site) != CLUSTER_QUEUE:
        shares.append(QueueShare(IDLE_QUEUE, {}))
    return shares
