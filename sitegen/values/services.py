"""Values of the platform service charts on the system pool: cert-manager, Envoy Gateway, metrics-server."""

from __future__ import annotations

from typing import Any

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests

PDB = {"podDisruptionBudget": {"enabled": True, "minAvailable": 1}}


class CertManagerValues(Values):
    crds: dict[str, bool] = {"enabled": True, "keep": True}
    replicaCount: int = 2
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    webhook: dict[str, Any]
    cainjector: dict[str, Any]
    startupapicheck: dict[str, Any]
    podDisruptionBudget: dict[str, Any] = {"enabled": True, "minAvailable": 1}
    prometheus: dict[str, Any] = {"enabled": True, "servicemonitor": {"enabled": True}}
    # certificates for Gateway listeners and ACME HTTP-01 through HTTPRoutes
    config: dict[str, Any] = {
        "apiVersion": "controller.config.cert-manager.io/v1alpha1",
        "kind": "ControllerConfiguration",
        "enableGatewayAPI": True,
    }


def cert_manager_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> CertManagerValues:
    system = placed(cluster.system_pool.placement)
    return CertManagerValues(
        resources=requests("50m", "128Mi", "512Mi"),
        webhook={"replicaCount": 2, "resources": requests("20m", "64Mi", "256Mi"), **PDB, **system},
        cainjector={"replicaCount": 2, "resources": requests("20m", "128Mi", "512Mi"), **PDB, **system},
        startupapicheck=system,
        **system,
    )


class EnvoyGatewayValues(Values):
    deployment: dict[str, Any]


def envoy_gateway_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> EnvoyGatewayValues:
    # The controller; the Envoy data plane is placed by the EnvoyProxy object of the gateway app.
    return EnvoyGatewayValues(
        deployment={
            "replicas": 2,
            "pod": placed(cluster.system_pool.placement),
            "envoyGateway": {"resources": requests("100m", "256Mi", "1Gi")},
        }
    )


class MetricsServerValues(Values):
    replicas: int = 2
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    # Kubelet serving certificates are self-signed (kubeadm default, no CSR approver yet): metrics-server
    # talks to the node IP without verifying it. Moving kubelets to serverTLSBootstrap removes this.
    args: list[str] = ["--kubelet-preferred-address-types=InternalIP", "--kubelet-insecure-tls"]
    serviceMonitor: dict[str, bool] = {"enabled": True}
    podDisruptionBudget: dict[str, Any] = {"enabled": True, "minAvailable": 1}


def metrics_server_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> MetricsServerValues:
    return MetricsServerValues(
        resources=requests("100m", "200Mi", "1Gi"), **placed(cluster.system_pool.placement)
    )
