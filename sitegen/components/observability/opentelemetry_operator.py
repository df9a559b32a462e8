"""`opentelemetry-operator`: the OpenTelemetry operator on the hub, its webhook signed by cert-manager."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, ObjectPatch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.observability import PROJECT
from sitegen.components.observability.collector import COLLECTOR_IMAGE
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.privilege import (
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    Reviewed,
    narrow_rule,
)
from sitegen.components.values import (
    OFF,
    ON,
    Image,
    Placed,
    Resources,
    Toggle,
    Values,
    image,
    placed,
    requests,
)


class Pdb(Values):
    create: bool = True
    minAvailable: int = 1


class Manager(Values):
    collectorImage: Image
    resources: Resources
    serviceMonitor: Toggle


class AdmissionWebhooks(Values):
    certManager: Toggle = ON
    autoGenerateCert: Toggle = OFF


class OtelOperatorValues(Placed):
    replicaCount: int = 2
    pdb: Pdb = Pdb()
    manager: Manager
    admissionWebhooks: AdmissionWebhooks = AdmissionWebhooks()


class OpentelemetryOperator(ChartComponent):
    name = "opentelemetry-operator"
    chart = "opentelemetry-operator"
    serves = ("opentelemetry.io/v1alpha1", "opentelemetry.io/v1beta1")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (CertManager, KubePrometheusStack)  # its webhook certificate; its ServiceMonitor
    namespace = "opentelemetry-operator-system"
    security = NamespaceSecurity("restricted", "the operator runs restricted")
    images = {COLLECTOR_IMAGE: "the collectors the operator runs"}

    def reloads_certificates(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            self.object_key("Deployment", "opentelemetry-operator"): "its webhook server is "
            "controller-runtime's, which watches the pair's files (pkg/certwatcher)"
        }

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def values(self, ctx: ClusterContext) -> OtelOperatorValues:
        return OtelOperatorValues(
            manager=Manager(
                collectorImage=image(ctx.image(COLLECTOR_IMAGE)),
                resources=requests("100m", "128Mi", "512Mi"),
                serviceMonitor=ON,
            ),
            **placed(ctx.system_placement),
        )

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        core = {
            "apiGroups": [""],
            "resources": [
                "configmaps",
                "persistentvolumeclaims",
                "persistentvolumes",
                "pods",
                "serviceaccounts",
                "services",
            ],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }
        return [
            narrow_rule(
                "opentelemetry-operator-manager",
                0,
                core,
                [{**core, "resources": [r for r in core["resources"] if r != "persistentvolumes"]}],
                why="collectors keep state in claims of their StatefulSets; the operator never makes a "
                "PersistentVolume, and one it could make would be any host's path",
            )
        ]

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/opentelemetry-operator": Reviewed(
                (MAKES_PRIVILEGED_PODS, PATCHES_PRIVILEGED_PODS),
                "makes the collectors' DaemonSets and Deployments and injects instrumentation into pods, in the namespaces their custom resources live in",
            ),
        }
