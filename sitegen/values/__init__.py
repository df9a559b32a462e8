"""Typed Helm values per upstream chart app; see `base` for the rules every model follows."""

from __future__ import annotations

from collections.abc import Callable

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.argocd import argocd_values
from sitegen.values.base import Values
from sitegen.values.cilium import cilium_values
from sitegen.values.gpu_operator import gpu_operator_values
from sitegen.values.kueue import kueue_values
from sitegen.values.network_operator import network_operator_values
from sitegen.values.nfd import nfd_values
from sitegen.values.observability import (
    grafana_values,
    kube_prometheus_stack_values,
    loki_values,
    otel_gateway_values,
    otel_node_values,
    otel_operator_values,
    smartctl_exporter_values,
)
from sitegen.values.platform import harbor_values, vllm_stack_values
from sitegen.values.services import cert_manager_values, envoy_gateway_values, metrics_server_values
from sitegen.values.storage import (
    aistor_operator_values,
    csi_isilon_values,
    external_secrets_values,
    topolvm_values,
    volume_manager_values,
)

BUILDERS: dict[str, Callable[[Site, VariantLayout, ClusterLayout], Values]] = {
    "argo-cd": lambda site, layout, cluster: argocd_values(site, layout),
    "cilium": lambda site, layout, cluster: cilium_values(site, cluster),
    "gpu-operator": gpu_operator_values,
    "kueue": kueue_values,
    "network-operator": network_operator_values,
    "node-feature-discovery": nfd_values,
    "external-secrets": external_secrets_values,
    "aistor-operator": aistor_operator_values,
    "aistor-volume-manager": volume_manager_values,
    "powerscale-csi": csi_isilon_values,
    "topolvm": topolvm_values,
    "cert-manager": cert_manager_values,
    "envoy-gateway": envoy_gateway_values,
    "metrics-server": metrics_server_values,
    "kube-prometheus-stack": kube_prometheus_stack_values,
    "smartctl-exporter": smartctl_exporter_values,
    "grafana": grafana_values,
    "loki": loki_values,
    "opentelemetry-operator": otel_operator_values,
    "otel-node": otel_node_values,
    "otel-gateway": otel_gateway_values,
    "harbor": harbor_values,
    "vllm": vllm_stack_values,
}


def chart_values(site: Site, layout: VariantLayout, cluster: ClusterLayout, app: str) -> Values:
    return BUILDERS[app](site, layout, cluster)
