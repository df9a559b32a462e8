"""`aistor-volumemanager`: AIStor's CSI driver, one volume per NVMe drive of the storage pool."""

from __future__ import annotations

from sitegen.components.base import (
    CRD,
    CSI_DRIVER,
    RBAC,
    STORAGE_CLASS,
    ChartComponent,
    Layer,
    NamespaceSecurity,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Values, placed


class Controller(Placed):
    replicas: int


class VolumeManagerValues(Values):
    controller: Controller
    nodeserver: Placed


class AIStorVolumeManager(ChartComponent):
    name = "aistor-volumemanager"
    chart = "aistor-volumemanager"
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "aistor-volumemanager"
    security = NamespaceSecurity("privileged", "the CSI node server formats and mounts the AIStor drives")
    cluster_kinds = (*RBAC, CRD, CSI_DRIVER, STORAGE_CLASS)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def values(self, ctx: ClusterContext) -> VolumeManagerValues:
        storage = ctx.cluster.pool(ctx.site.storage.aistor.pool)
        return VolumeManagerValues(
            controller=Controller(replicas=3, **placed(ctx.system_placement)),
            # the node server manages the drives, so it runs exactly where AIStor runs
            nodeserver=Placed(**placed(storage.placement)),
        )
