"""`metrics-server`: resource metrics for `kubectl top` and autoscalers, on the system pool."""

from __future__ import annotations

from sitegen.components.base import ChartComponent, Layer
from sitegen.components.context import ClusterContext
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.platform import PROJECT
from sitegen.components.values import ON, Pdb, Placed, Resources, Toggle, placed, requests


class MetricsServerValues(Placed):
    replicas: int = 2
    resources: Resources
    # Kubelet serving certificates are self-signed (kubeadm default, no CSR approver yet): metrics-server
    # talks to the node IP without verifying it. Moving kubelets to serverTLSBootstrap removes this.
    args: list[str] = ["--kubelet-preferred-address-types=InternalIP", "--kubelet-insecure-tls"]
    serviceMonitor: Toggle = ON
    podDisruptionBudget: Pdb = Pdb()


class MetricsServer(ChartComponent):
    name = "metrics-server"
    chart = "metrics-server"
    serves_at_runtime = ("metrics.k8s.io/v1beta1",)  # an APIService backed by metrics-server
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, KubePrometheusStack)  # its ServiceMonitor

    def values(self, ctx: ClusterContext) -> MetricsServerValues:
        return MetricsServerValues(resources=requests("100m", "200Mi", "1Gi"), **placed(ctx.system_placement))
