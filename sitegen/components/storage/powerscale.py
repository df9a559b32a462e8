"""`powerscale`: the CSI driver's credentials by reference, a StorageClass per use, snapshots."""

from __future__ import annotations

from constructs import Construct
from constructs.powerscale import PowerScaleAccess, PowerScaleClasses, PowerScaleSnapshots
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.storage import PROJECT
from sitegen.components.storage.csi_isilon import CsiIsilon, CsiIsilonNode
from sitegen.components.storage.snapshot_controller import SnapshotController


class PowerScale(RenderedComponent):
    name = "powerscale"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (SecretStore, SnapshotController)  # the VolumeSnapshotClass CRD
    # the driver's pods mount the credentials and certificates written here: they come first
    before = (CsiIsilon, CsiIsilonNode)
    namespace = CsiIsilon.namespace
    skip_dry_run = True

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return CsiIsilon.applies(scope)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        csi = ctx.get(CsiIsilon)
        powerscale = ctx.site.storage.powerscale
        # the controller and the node plugin each mount them, in their own namespaces
        for id, namespace in (("Access", csi.namespace), ("NodeAccess", ctx.get(CsiIsilonNode).namespace)):
            PowerScaleAccess(
                scope,
                id,
                powerscale=powerscale,
                release=csi.release_name,
                namespace=namespace,
                store=ctx.store,
            )
        PowerScaleClasses(scope, "Classes", powerscale=powerscale)
        PowerScaleSnapshots(scope, "Snapshots")
