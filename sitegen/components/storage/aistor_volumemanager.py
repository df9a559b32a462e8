"""`aistor-volumemanager`: AIStor's CSI driver, one volume per NVMe drive of the storage pool."""

from __future__ import annotations

from sitegen.components.base import (
    ChartComponent,
    Layer,
    NamespaceSecurity,
    ObjectPatch,
    placement_patch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Values, placed


class Controller(Values):
    replicas: int


class VolumeManagerValues(Values):
    controller: Controller
    nodeserver: Placed


class AIStorVolumeManager(ChartComponent):
    name = "aistor-volumemanager"
    chart = "aistor-volumemanager"
    serves = ("directpv.min.io/v1beta1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "directpv"  # the chart's, whatever the release namespace
    security = NamespaceSecurity("privileged", "the CSI node server formats and mounts the AIStor drives")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            ObjectPatch(
                "Namespace",
                self.namespace,
                "the namespaces app creates it, with its Pod Security level",
                drop=True,
            ),
            placement_patch(
                "Deployment",
                "controller",
                ctx.system_placement,
                why="the chart has no placement values for it",
            ),
        ]

    def values(self, ctx: ClusterContext) -> VolumeManagerValues:
        storage = ctx.cluster.pool(ctx.site.storage.aistor.pool)
        return VolumeManagerValues(
            controller=Controller(replicas=3),
            # the node server manages the drives, so it runs exactly where AIStor runs
            nodeserver=Placed(**placed(storage.placement)),
        )
