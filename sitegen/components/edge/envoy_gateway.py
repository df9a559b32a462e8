"""`envoy-gateway`: the Gateway API implementation (the controller; the data plane is the `gateway` app's)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.operands import Operand, Ref
from sitegen.components.ownership import JobSecret
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import PATCHES_PRIVILEGED_PODS, READS_SECRETS, Reviewed, RoleReview
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


# The Envoy fleet Envoy Gateway v1.9 makes of each Gateway of its GatewayClass (the default
# controllerName): a Deployment `envoy-<hashed namespace-name>` in its own namespace
# (internal/infrastructure/kubernetes/proxy/resource_provider.go, ExpectedResourceHashedName), pods
# labelled as below, placed and sized by the EnvoyProxy the Gateway's infrastructure.parametersRef or
# its class's parametersRef names (envoyDeployment: replicas, pod, container), else by its defaults
# (api/v1alpha1/shared_types.go: 1 replica, 100m and 512Mi; the shutdown-manager sidecar's 10m/32Mi
# are not counted).
_ENVOY_DEPLOYMENT = "/spec/provider/kubernetes/envoyDeployment"
ENVOY_PROXIES = Operand(
    "gateway.networking.k8s.io", "Gateway", "Deployment", "envoy-{hashed}",
    why="Envoy Gateway v1.9.0",
    namespace="envoy-gateway-system",
    labels={
        "app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
        "app.kubernetes.io/managed-by": "envoy-gateway",
        "gateway.envoyproxy.io/owning-gateway-name": "{name}",
        "gateway.envoyproxy.io/owning-gateway-namespace": "{namespace}",
    },
    only_if=(
        (Ref("GatewayClass", "/spec/gatewayClassName", cluster_scoped=True),),
        "/spec/controllerName", "gateway.envoyproxy.io/gatewayclass-controller",
    ),
    config=(
        (Ref("EnvoyProxy", "/spec/infrastructure/parametersRef/name"),),
        (
            Ref("GatewayClass", "/spec/gatewayClassName", cluster_scoped=True),
            Ref("EnvoyProxy", "/spec/parametersRef/name", "/spec/parametersRef/namespace"),
        ),
    ),
    pod={
        f: f"{_ENVOY_DEPLOYMENT}/pod/{f}"
        for f in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "securityContext",
                  "priorityClassName", "imagePullSecrets")
    },
    pod_labels=f"{_ENVOY_DEPLOYMENT}/pod/labels",
    replicas=f"{_ENVOY_DEPLOYMENT}/replicas",
    resources=f"{_ENVOY_DEPLOYMENT}/container/resources",
    default_resources={"requests": {"cpu": "100m", "memory": "512Mi"}},
    container={"securityContext": {
        "allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }},
)  # fmt: skip


class EnvoyGateway(ChartComponent):
    name = "envoy-gateway"
    job_secrets = (
        JobSecret(
            "envoy-gateway",
            "envoy-gateway-gateway-helm-certgen",
            "Envoy Gateway's certgen writes its control-plane certificates",
        ),
    )
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
    operands = (ENVOY_PROXIES,)

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

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "envoy-gateway-gateway-helm-envoy-gateway-role": RoleReview(
                (READS_SECRETS,),
                "the certificates and credentials Gateways and policies of any namespace reference",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/envoy-gateway": Reviewed(
                (READS_SECRETS, PATCHES_PRIVILEGED_PODS),
                "reads the TLS Secrets Gateways and policies name, wherever they live, and patches its proxies' pods (topology labels); the chart binds it cluster-wide",
            ),
        }
