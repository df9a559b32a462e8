"""`coredns`: kubeadm's CoreDNS, kept on the system pool by a partial Deployment."""

from __future__ import annotations

from constructs import Construct
from constructs.edge import CoreDnsPlacement
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform import PROJECT
from sitegen.components.platform_nodes.node_labels import NodeLabels


class CoreDns(RenderedComponent):
    name = "coredns"
    project = PROJECT
    layer = Layer.SERVICES
    after = (NodeLabels,)  # the system pool's role label

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        CoreDnsPlacement(scope, "CoreDns", placement=ctx.system_placement)
