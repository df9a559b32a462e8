"""`cilium-lb`: the cluster's load-balancer addresses (Cilium LB-IPAM), announced from its system pool."""

from __future__ import annotations

from constructs import Construct
from constructs.cilium import LoadBalancerPool
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.networking import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.storage.aistor import AIStor


class CiliumLb(RenderedComponent):
    name = "cilium-lb"
    project = PROJECT
    layer = Layer.RESOURCES
    # The LB-IPAM CRD is registered by the Cilium operator at run time.
    skip_dry_run = True
    after = (Cilium,)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        LoadBalancerPool(
            scope, "Pool", cluster=ctx.cluster, interface=ctx.site.network.kubernetes.interface,
            front_doors=len(AIStor.front_door_hosts(ctx)),
        )  # fmt: skip
