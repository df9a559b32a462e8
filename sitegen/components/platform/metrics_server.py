"""`metrics-server`: resource metrics for `kubectl top` and autoscalers, on the system pool."""

from __future__ import annotations

from sitegen.components.base import ChartComponent, Layer
from sitegen.components.context import ClusterContext
from sitegen.components.flows import NODES, Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.platform import PROJECT
from sitegen.components.platform_nodes.kubelet_csr_approver import KubeletCsrApprover
from sitegen.components.runtime_needs import ApiCall, RuntimeNeeds
from sitegen.components.values import ON, Pdb, Placed, Resources, Toggle, placed, requests

# Where metrics-server reads each kubelet's /metrics/resource: the port the Node reports
# (status.daemonEndpoints.kubeletEndpoint, kubelet's default `port`), which kubeadm leaves as it is.
KUBELET_PORT = 10250


class MetricsServerValues(Placed):
    replicas: int = 2
    resources: Resources
    # Kubelets serve certificates of the cluster CA for their node IP (serverTLSBootstrap, approved by
    # kubelet-csr-approver): metrics-server verifies them with the CA of its service account.
    args: list[str] = ["--kubelet-preferred-address-types=InternalIP"]
    serviceMonitor: Toggle = ON
    podDisruptionBudget: Pdb = Pdb()


class MetricsServer(ChartComponent):
    name = "metrics-server"
    chart = "metrics-server"
    serves_at_runtime = ("metrics.k8s.io/v1beta1",)  # an APIService backed by metrics-server
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, KubePrometheusStack, KubeletCsrApprover)  # its ServiceMonitor; kubelet certificates
    # metrics-server v0.8.1 (chart 3.13.1): pkg/server/config.go lists the nodes it scrapes through a
    # Node informer (`informer.Core().V1().Nodes()`); its readyz waits for that informer to sync.
    runtime_needs = RuntimeNeeds(
        api=tuple(
            ApiCall("metrics-server", verb, "nodes", source="metrics-server v0.8.1 pkg/server/config.go")
            for verb in ("list", "watch")
        )
    )

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(NODES, (KUBELET_PORT,), "the kubelets' resource metrics")]

    def values(self, ctx: ClusterContext) -> MetricsServerValues:
        return MetricsServerValues(resources=requests("100m", "200Mi", "1Gi"), **placed(ctx.system_placement))
