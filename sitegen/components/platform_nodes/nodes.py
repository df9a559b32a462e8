"""`nodes`: the labels of every host, as partial Node objects (see constructs/node_pool.py)."""

from __future__ import annotations

from constructs import Construct
from constructs.node_pool import NodePool
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform_nodes import PROJECT


class Nodes(RenderedComponent):
    name = "nodes"
    project = PROJECT
    layer = Layer.FOUNDATION

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        for pool in ctx.cluster.pools:
            NodePool(scope, pool.name, pool=pool)
