"""`gpu-node-guard`: cordons a GPU node that Prometheus shows broken, on the system pool (see
constructs/gpu_node_guard.py); the same conditions (constructs/node_faults.py) alert."""

from __future__ import annotations

from collections.abc import Mapping

from constructs import Construct
from constructs.gpu_node_guard import NAME
from constructs.gpu_node_guard import GpuNodeGuard as Guard
from constructs.node_faults import cordon_conditions
from constructs.site_watches import GuardWatch, Watch
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.gpu import PROJECT
from sitegen.components.observability.kube_prometheus_stack import (
    PROMETHEUS_PORT,
    PROMETHEUS_SERVICE,
    KubePrometheusStack,
)
from sitegen.components.privilege import CHANGES_NODES, Reviewed

IMAGE = "curl"


def guard_conditions(scope: ClusterScope) -> dict[str, str]:
    """What the guard of a cluster cordons its GPU nodes for (and the hub alerts on when it cannot)."""
    return cordon_conditions(scope.ndr_ports(scope.gpu_pools))


class GpuNodeGuard(RenderedComponent):
    name = "gpu-node-guard"
    project = PROJECT
    layer = Layer.SERVICES
    namespace = "gpu-node-guard"
    security = NamespaceSecurity("restricted", "one controller, restricted")
    images = {IMAGE: "the GPU node guard's queries and cordons"}
    after = (KubePrometheusStack,)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus  # it asks its own cluster's Prometheus (a GPU spoke's keeps a few hours)

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(KubePrometheusStack, (PROMETHEUS_PORT,), "the conditions it cordons GPU nodes for")]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        conditions = tuple(sorted(guard_conditions(scope).items()))
        limit = scope.site.services.health.auto_cordon_max_nodes
        return [GuardWatch(self.namespace, NAME, limit, conditions)]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        prometheus = ctx.get(KubePrometheusStack).namespace
        Guard(
            scope,
            "Guard",
            namespace=self.namespace,
            hosts=[h.name for pool in ctx.gpu_pools for h in pool.hosts],
            conditions=guard_conditions(ctx),
            prometheus_url=ctx.service_url(PROMETHEUS_SERVICE, prometheus, PROMETHEUS_PORT),
            max_nodes=ctx.site.services.health.auto_cordon_max_nodes,
            image=ctx.image(IMAGE),
            placement=ctx.system_placement,
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/gpu-node-guard": Reviewed(
                (CHANGES_NODES,),
                "cordons a GPU node whose health check fails (spec.unschedulable), at most the limit the site sets",
            ),
        }
