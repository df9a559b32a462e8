"""`coredns`: kubeadm's CoreDNS, kept on the system pool by a partial Deployment."""

from __future__ import annotations

from constructs import Construct
from constructs.edge import CoreDnsPlacement
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform import PROJECT


class CoreDns(RenderedComponent):
    name = "coredns"
    project = PROJECT
    layer = Layer.SERVICES

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        CoreDnsPlacement(scope, "CoreDns", placement=ctx.system_placement)
