"""`cert-manager`: certificates for the Gateway and the webhooks, on the hub's system pool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.ownership import WrittenField
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    MAKES_PRIVILEGED_PODS,
    READS_SECRETS,
    REWRITES_ADMISSION,
    UPDATES_CRDS,
    Reviewed,
    RoleReview,
)
from sitegen.components.values import ON, Pdb, Placed, Resources, Toggle, Values, placed, requests

_INJECT = (
    "cert-manager.io/inject-ca-from",
    "cert-manager.io/inject-ca-from-secret",
    "cert-manager.io/inject-apiserver-ca",
)


class Crds(Values):
    enabled: bool = True
    keep: bool = True


class Replicated(Placed):
    replicaCount: int
    resources: Resources
    podDisruptionBudget: Pdb = Pdb()


class Prometheus(Values):
    enabled: bool = True
    servicemonitor: Toggle = ON


class ControllerConfig(Values):
    """Certificates for Gateway listeners and ACME HTTP-01 through HTTPRoutes."""

    apiVersion: Literal["controller.config.cert-manager.io/v1alpha1"] = (
        "controller.config.cert-manager.io/v1alpha1"
    )
    kind: Literal["ControllerConfiguration"] = "ControllerConfiguration"
    enableGatewayAPI: bool = True


class CertManagerValues(Replicated):
    crds: Crds = Crds()
    webhook: Replicated
    cainjector: Replicated
    startupapicheck: Placed
    prometheus: Prometheus = Prometheus()
    config: ControllerConfig = ControllerConfig()


class CertManager(ChartComponent):
    name = "cert-manager"
    chart = "cert-manager"
    serves = ("acme.cert-manager.io/v1", "cert-manager.io/v1")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces, KubePrometheusStack)  # its ServiceMonitor
    namespace = "cert-manager"
    security = NamespaceSecurity("restricted", "the chart's pods run restricted")
    writes = tuple(
        WrittenField(
            group, kind, path, annotations=_INJECT,
            why="cert-manager's cainjector writes the CA of the certificate or Secret the object's "
            "inject-ca-from annotation names (cert-manager docs, concepts/ca-injector)",
        )
        for group, kind, path in (
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "/webhooks/*/clientConfig/caBundle"),
            ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", "/webhooks/*/clientConfig/caBundle"),
            ("apiregistration.k8s.io", "APIService", "/spec/caBundle"),
            ("apiextensions.k8s.io", "CustomResourceDefinition", "/spec/conversion/webhook/clientConfig/caBundle"),
        )
    )  # fmt: skip

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def values(self, ctx: ClusterContext) -> CertManagerValues:
        system = placed(ctx.system_placement)
        return CertManagerValues(
            replicaCount=2,
            resources=requests("50m", "128Mi", "512Mi"),
            webhook=Replicated(replicaCount=2, resources=requests("20m", "64Mi", "256Mi"), **system),
            cainjector=Replicated(replicaCount=2, resources=requests("20m", "128Mi", "512Mi"), **system),
            startupapicheck=Placed(**system),
            **system,
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "cert-manager-cainjector": RoleReview(
                (READS_SECRETS,), "injects CA bundles from Certificates' Secrets of any namespace"
            ),
            "cert-manager-controller-certificates": RoleReview(
                (READS_SECRETS,), "writes each Certificate's Secret in its namespace"
            ),
            "cert-manager-controller-challenges": RoleReview(
                (READS_SECRETS,), "ACME challenge solvers' credentials"
            ),
            "cert-manager-controller-clusterissuers": RoleReview(
                (READS_SECRETS,), "the ClusterIssuers' CA and credentials"
            ),
            "cert-manager-controller-issuers": RoleReview(
                (READS_SECRETS,), "each Issuer's CA and credentials, in its namespace"
            ),
            "cert-manager-controller-orders": RoleReview((READS_SECRETS,), "ACME account keys"),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/cert-manager": Reviewed(
                (READS_SECRETS, MAKES_PRIVILEGED_PODS),
                "writes the Secret of every Certificate in its namespace and reads issuer keys; creates ACME solver pods where a Certificate lives (none here: the site CA issues)",
            ),
            f"{self.namespace}/cert-manager-cainjector": Reviewed(
                (READS_SECRETS, REWRITES_ADMISSION, UPDATES_CRDS),
                "injects CA bundles into webhook configurations and CRD conversion webhooks from the Secrets they name: its whole job",
            ),
        }
