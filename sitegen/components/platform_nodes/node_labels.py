"""`node-labels`: every pool's labels on the hosts that joined, their taints verified (see
constructs/node_labels.py); no Node object is in Git."""

from __future__ import annotations

from collections.abc import Mapping

from constructs import Construct
from constructs.node_labels import NodeLabeler
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform_nodes import PROJECT
from sitegen.components.privilege import CHANGES_NODES, Reviewed


class NodeLabels(RenderedComponent):
    name = "node-labels"
    project = PROJECT
    layer = Layer.FOUNDATION
    namespace = "node-labeler"
    security = NamespaceSecurity("restricted", "one curl Job, restricted")
    images = {"curl": "the Job that labels joined nodes through the API"}
    # its Job needs pod networking; the RUNBOOK labels the first nodes by hand before the CNI
    after = (Namespaces, Cilium)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        NodeLabeler(
            scope,
            "NodeLabeler",
            pools=list(ctx.cluster.pools),
            namespace=self.namespace,
            image=ctx.image("curl"),
            placement=ctx.system_placement,
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/node-labeler": Reviewed(
                (CHANGES_NODES,),
                "writes each node's pool and role labels from config (the pools' placement)",
            ),
        }
