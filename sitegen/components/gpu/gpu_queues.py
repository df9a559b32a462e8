"""`gpu-queues`: Kueue's ResourceFlavors and the ClusterQueue of the GPU pools, quotas from the model."""

from __future__ import annotations

from constructs import Construct
from constructs.kueue import GpuQueues as QueueObjects
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT
from sitegen.components.gpu.kueue import Kueue


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
        QueueObjects(scope, "Queues", pools=ctx.gpu_pools, fabric=ctx.site.fabric)
