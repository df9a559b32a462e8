"""`prometheus-smartctl-exporter`: NVMe wear and spare of every node's drives (node-exporter has no wear metric)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import EVERY_POOL, ChartComponent, Layer, NodeAgent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.observability import PROJECT
from sitegen.components.observability.kube_prometheus_stack import AGENTS_NAMESPACE, KubePrometheusStack
from sitegen.components.values import EVERY_TAINT, ON, Resources, Toggle, Toleration, Values, requests


class PrometheusSmartctlExporterValues(Values):
    # smartctl reads the NVMe SMART log through the device nodes: the chart runs it privileged.
    tolerations: list[Toleration] = EVERY_TAINT
    resources: Resources
    serviceMonitor: Toggle = ON


class PrometheusSmartctlExporter(ChartComponent):
    name = "prometheus-smartctl-exporter"
    chart = "prometheus-smartctl-exporter"
    project = PROJECT
    layer = Layer.SERVICES
    after = (KubePrometheusStack,)  # its ServiceMonitor
    namespace = AGENTS_NAMESPACE

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key("DaemonSet", f"{self.name}-0"): NodeAgent(
                frozenset({EVERY_POOL}), "NVMe wear of every node's drives"
            )
        }

    def values(self, ctx: ClusterContext) -> PrometheusSmartctlExporterValues:
        return PrometheusSmartctlExporterValues(resources=requests("20m", "32Mi", "128Mi"))
