"""`envoy-gateway`: the Gateway API implementation (the controller; the data plane is the `gateway` app's)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import PATCHES_PRIVILEGED_PODS, READS_SECRETS, Reviewed
from sitegen.components.values import Placed, Resources, Values, placed, requests


class Controller(Values):
    resources: Resources


class Deployment(Values):
    replicas: int
    pod: Placed
    envoyGateway: Controller


class CertgenJob(Placed):
    resources: Resources


class Certgen(Values):
    """The Job that issues the controller's webhook and xDS certificates."""

    job: CertgenJob


class EnvoyGatewayValues(Values):
    deployment: Deployment
    certgen: Certgen


class EnvoyGateway(ChartComponent):
    name = "envoy-gateway"
    chart = "envoy-gateway"
    serves = (
        "gateway.envoyproxy.io/v1alpha1",
        "gateway.networking.k8s.io/v1",
        "gateway.networking.k8s.io/v1alpha2",
        "gateway.networking.k8s.io/v1alpha3",
        "gateway.networking.k8s.io/v1beta1",
        "gateway.networking.x-k8s.io/v1alpha1",
    )
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "envoy-gateway-system"
    security = NamespaceSecurity("baseline", "the Envoy data plane is not verified against restricted")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def values(self, ctx: ClusterContext) -> EnvoyGatewayValues:
        return EnvoyGatewayValues(
            deployment=Deployment(
                replicas=2,
                pod=Placed(**placed(ctx.system_placement)),
                envoyGateway=Controller(resources=requests("100m", "256Mi", "1Gi")),
            ),
            certgen=Certgen(
                job=CertgenJob(resources=requests("10m", "32Mi"), **placed(ctx.system_placement))
            ),
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/envoy-gateway": Reviewed(
                (READS_SECRETS, PATCHES_PRIVILEGED_PODS),
                "reads the TLS Secrets Gateways and policies name, wherever they live, and patches its proxies' pods (topology labels); the chart binds it cluster-wide",
            ),
        }
