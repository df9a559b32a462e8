"""`envoy-gateway`: the Gateway API implementation (the controller; the data plane is the `gateway` app's)."""

from __future__ import annotations

from sitegen.components.base import CRD, RBAC, WEBHOOKS, ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.values import Placed, Resources, Values, placed, requests


class Controller(Values):
    resources: Resources


class Deployment(Values):
    replicas: int
    pod: Placed
    envoyGateway: Controller


class EnvoyGatewayValues(Values):
    deployment: Deployment


class EnvoyGateway(ChartComponent):
    name = "envoy-gateway"
    chart = "envoy-gateway"
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "envoy-gateway-system"
    security = NamespaceSecurity("baseline", "the Envoy data plane is not verified against restricted")
    cluster_kinds = (*RBAC, CRD, *WEBHOOKS)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def values(self, ctx: ClusterContext) -> EnvoyGatewayValues:
        return EnvoyGatewayValues(
            deployment=Deployment(
                replicas=2,
                pod=Placed(**placed(ctx.system_placement)),
                envoyGateway=Controller(resources=requests("100m", "256Mi", "1Gi")),
            )
        )
