"""`kube-prometheus-stack`: Prometheus, Alertmanager, the operator, kube-state-metrics and node-exporter.

The hub runs HA Prometheus on local NVMe with the site's rules; any other cluster runs Prometheus in
agent mode, writing to the hub through the Gateway (prometheus.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from constructs.site_watches import MetricsDeliveryWatch, Watch
from sitegen.components.base import (
    EVERY_POOL,
    ChartComponent,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    State,
    VaultSecretSpec,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import EVERY_NAMESPACE, NODES, WORLD, Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability import PROJECT
from sitegen.components.observability.prometheus import (
    Prometheus,
    StorageSpec,
    hub_prometheus,
    local_volume,
    spoke_prometheus,
)
from sitegen.components.observability.telemetry import delivery_credentials
from sitegen.components.operands import Operand
from sitegen.components.ownership import JobSecret, WrittenField
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    MAKES_PRIVILEGED_PODS,
    READS_SECRETS,
    REWRITES_ADMISSION,
    Reviewed,
    RoleReview,
)
from sitegen.components.values import (
    EVERY_TAINT,
    OFF,
    ON,
    Pdb,
    Placed,
    Resources,
    Toggle,
    Toleration,
    Values,
    placed,
    requests,
)
from sitegen.model import ROLE_PREFIX, PoolLayout

NAMESPACE = "monitoring"
# The node agents (node-exporter, the log collector, smartctl) need the host: they run in a privileged
# namespace of their own, so that Prometheus, Alertmanager and their operator stay under restricted.
AGENTS_NAMESPACE = "monitoring-agents"
ALERTMANAGER_CONFIG = "alertmanager-config"  # its `alertmanager.yaml`, from the vault
ALERTMANAGER_VAULT_KEY = "alertmanager/config"
PROMETHEUS_PORT = 9090


class AlertmanagerSpec(Placed):
    # the configuration (receivers, their webhooks and keys) comes from the vault, not from values
    useExistingSecret: bool = True
    configSecret: str = ALERTMANAGER_CONFIG
    replicas: int
    podAntiAffinity: Literal["soft", "hard"]
    storage: StorageSpec
    resources: Resources


class Alertmanager(Values):
    enabled: bool | None = None
    podDisruptionBudget: Pdb | None = None
    alertmanagerSpec: AlertmanagerSpec | None = None


class RuleToggles(Values):
    kubeControllerManager: bool
    kubeSchedulerAlerting: bool
    kubeSchedulerRecording: bool
    kubeProxy: bool


class DefaultRules(Values):
    create: bool
    rules: RuleToggles | None = None


class AdmissionPatch(Placed):
    enabled: bool


class AdmissionWebhooks(Values):
    patch: AdmissionPatch


class PrometheusOperator(Placed):
    resources: Resources
    admissionWebhooks: AdmissionWebhooks


class KubeStateMetrics(Placed):
    resources: Resources
    # Its Secrets collector would make it read every Secret of the cluster (values included) for
    # metadata no alert or dashboard of the site uses: the chart then drops the rule.
    collectorsExclude: list[str] = ["secrets"]


class Relabeling(Values):
    sourceLabels: list[str]
    regex: str | None = None
    targetLabel: str
    replacement: str | None = None
    action: Literal["replace"]


class AttachMetadata(Values):
    node: bool


class NodeMonitor(Values):
    attachMetadata: AttachMetadata
    relabelings: list[Relabeling]


class NodeExporterPrometheus(Values):
    monitor: NodeMonitor


class NodeExporter(Values):
    namespaceOverride: str = AGENTS_NAMESPACE
    tolerations: list[Toleration]
    resources: Resources
    prometheus: NodeExporterPrometheus


class ChartGrafana(Values):
    enabled: bool
    forceDeployDashboards: bool


class EtcdService(Values):
    port: int
    targetPort: int


class KubeEtcd(Values):
    enabled: bool
    service: EtcdService


class KubeletMonitor(Values):
    https: bool
    insecureSkipVerify: bool


class Kubelet(Values):
    serviceMonitor: KubeletMonitor


class KubePrometheusStackValues(Values):
    crds: Toggle = ON
    # Grafana is its own app; the chart's Kubernetes dashboards still ship as ConfigMaps for it.
    grafana: ChartGrafana = ChartGrafana(enabled=False, forceDeployDashboards=True)
    defaultRules: DefaultRules
    alertmanager: Alertmanager
    prometheus: Prometheus
    prometheusOperator: PrometheusOperator
    kubeStateMetrics: Toggle = ON
    kube_state_metrics: KubeStateMetrics = Field(alias="kube-state-metrics")
    nodeExporter: Toggle = ON
    prometheus_node_exporter: NodeExporter = Field(alias="prometheus-node-exporter")
    # kubeadm keeps both bound to 127.0.0.1 (CIS 1.3.7, 1.4.2): not scraped, and no alerts that would
    # fire for the missing targets.
    kubeControllerManager: Toggle = OFF
    kubeScheduler: Toggle = OFF
    # Cilium replaces kube-proxy.
    kubeProxy: Toggle = OFF
    # etcd serves /metrics over plain HTTP on :2381 of its node address (the per-member kubeadm patch).
    kubeEtcd: KubeEtcd = KubeEtcd(enabled=True, service=EtcdService(port=2381, targetPort=2381))
    # Kubelets serve certificates of the cluster CA (serverTLSBootstrap): scraped over HTTPS and
    # verified with the service account's CA, which the chart sets when https is on.
    kubelet: Kubelet = Kubelet(serviceMonitor=KubeletMonitor(https=True, insecureSkipVerify=False))


def pool_relabelings(pools: tuple[PoolLayout, ...]) -> list[Relabeling]:
    """Give node-level series a `node` and a `pool` label, read from the node's role label."""
    rules = [
        Relabeling(sourceLabels=["__meta_kubernetes_pod_node_name"], targetLabel="node", action="replace")
    ]
    for pool in pools:
        meta = "__meta_kubernetes_node_labelpresent_" + "".join(
            c if c.isalnum() else "_" for c in ROLE_PREFIX + pool.role
        )
        rules.append(
            Relabeling(
                sourceLabels=[meta], regex="true", targetLabel="pool", replacement=pool.name, action="replace"
            )
        )
    return rules


# What prometheus-operator v0.93 makes of its resources (pkg/prometheus/server/statefulset.go,
# pkg/prometheus/agent/statefulset.go, pkg/alertmanager/statefulset.go): a StatefulSet of shard 0 (one
# shard here), its pods labelled as below plus podMetadata's, placed and sized by the resource's own
# fields, its data on a claim of `storage.volumeClaimTemplate` (none: an emptyDir); the main container
# runs read-only without privilege escalation or capabilities (operator.DefaultSecurityContext...).
_OPERATOR_POD = {
    f: f"/spec/{f}"
    for f in (
        "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "securityContext",
        "serviceAccountName", "priorityClassName", "hostNetwork", "imagePullSecrets",
    )
}  # fmt: skip
_OPERATOR_CONTAINER = {
    "securityContext": {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
    }
}  # fmt: skip
PROMETHEUS_OPERANDS = tuple(
    Operand(
        "monitoring.coreos.com", kind, "StatefulSet", name,
        why="prometheus-operator v0.93 (kube-prometheus-stack 88.5.3)",
        labels={
            "app.kubernetes.io/name": app, "app.kubernetes.io/instance": "{name}",
            "app.kubernetes.io/managed-by": "prometheus-operator", **extra,
        },
        pod=_OPERATOR_POD, pod_labels="/spec/podMetadata/labels", container=_OPERATOR_CONTAINER,
        claim="" if kind == "PrometheusAgent" else "/spec/storage/volumeClaimTemplate",
    )
    for kind, name, app, extra in (
        ("Prometheus", "prometheus-{name}", "prometheus",
         {"prometheus": "{name}", "operator.prometheus.io/name": "{name}", "operator.prometheus.io/shard": "0"}),
        ("PrometheusAgent", "prom-agent-{name}", "prometheus-agent",
         {"operator.prometheus.io/name": "{name}", "operator.prometheus.io/shard": "0"}),
        ("Alertmanager", "alertmanager-{name}", "alertmanager", {"alertmanager": "{name}"}),
    )
)  # fmt: skip


class KubePrometheusStack(ChartComponent):
    name = "kube-prometheus-stack"
    modelled_values = {
        "prometheus.prometheusSpec.retention": "services.yaml: monitoring.prometheus.retention_days",
        "prometheus.prometheusSpec.retentionSize": "services.yaml: monitoring.prometheus (its volume)",
        "alertmanager.alertmanagerSpec.replicas": "services.yaml: monitoring.alertmanager_replicas",
    }
    job_secrets = (
        JobSecret(
            "kube-prometheus-stack-admission",
            "kube-prometheus-stack-admission-create",
            "the operator's admission webhook certificate",
        ),
    )
    chart = "kube-prometheus-stack"
    serves = ("monitoring.coreos.com/v1", "monitoring.coreos.com/v1alpha1")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (
        Cilium,
        Namespaces,
    )  # its CRDs (ServiceMonitor, PrometheusRule) come before every chart's monitors
    namespace = NAMESPACE
    security = NamespaceSecurity(
        "restricted", "Prometheus, Alertmanager and their operator (the node agents: monitoring-agents)"
    )
    operands = PROMETHEUS_OPERANDS
    writes = tuple(
        WrittenField(
            "admissionregistration.k8s.io", kind, "/webhooks/*/clientConfig/caBundle",
            names=("kube-prometheus-stack-admission",),
            why="the chart's admission-patch Job (kube-webhook-certgen patch) writes the CA it generated "
            "into the operator's webhooks (chart templates/prometheus-operator/admission-webhooks/job-patch)",
        )
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    )  # fmt: skip

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [] if scope.is_hub else [MetricsDeliveryWatch(scope.cluster.name)]

    def vault_formats(self, scope: ClusterScope) -> Mapping[str, str]:
        if not scope.is_hub:
            return {}
        return {
            ALERTMANAGER_VAULT_KEY: "alertmanager.yaml: the site's receivers (their credentials are why it lives "
            "here) and a route that sends the always-firing `Watchdog` to a dead man's switch outside the site "
            "(its silence says alerting itself is down), `severity: critical` to paging and the rest to the "
            "operators' channel; `amtool check-config alertmanager.yaml` checks it before it is put"
        }

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """On the hub, Alertmanager's configuration (its receivers hold credentials); elsewhere, what
        Prometheus delivers its series to the hub with."""
        if not ctx.is_hub:
            return delivery_credentials(self.namespace, ctx.site)
        return [
            VaultSecretSpec(
                ALERTMANAGER_CONFIG, self.namespace, ALERTMANAGER_VAULT_KEY, ("alertmanager.yaml",)
            )
        ]

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(EVERY_NAMESPACE, (), "Prometheus scrapes every namespace's metrics"),
            Flow(NODES, (), "node-exporter, kubelets, etcd and Cilium agents on the host network"),
            Flow(WORLD, (443,), "Alertmanager's receivers; a spoke's Prometheus writes to the hub's Gateway"),
        ]

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key(
                "DaemonSet", f"{self.name}-prometheus-node-exporter", namespace=AGENTS_NAMESPACE
            ): NodeAgent(frozenset({EVERY_POOL}), "node metrics (InfiniBand ports included) of every node")
        }

    def state(self, ctx: ClusterContext) -> list[State]:
        if not ctx.is_hub:
            return []  # the spokes' agents keep no volume
        monitoring = ctx.site.services.monitoring
        prom = monitoring.prometheus
        return [
            State(f"{self.name}-prometheus", f"the site's metrics, {prom.retention_days} days", "metrics",
                  without_copy=f"{prom.replicas} replicas scrape the same targets, each on its own node: "
                  "one lost, its twin still has the history (it starts empty); metrics are not backed up"),
            State(f"{self.name}-alertmanager", "silences and the notification log", "state",
                  copies=(f"on each of {monitoring.alertmanager_replicas} replicas, on as many nodes (gossip)",)),
        ]  # fmt: skip

    def values(self, ctx: ClusterContext) -> KubePrometheusStackValues:
        system = placed(ctx.system_placement)
        monitoring = ctx.site.services.monitoring
        if ctx.is_hub:
            prometheus = hub_prometheus(ctx, system)
            alertmanager = Alertmanager(
                podDisruptionBudget=Pdb(),
                alertmanagerSpec=AlertmanagerSpec(
                    replicas=monitoring.alertmanager_replicas,
                    podAntiAffinity="hard",
                    storage=local_volume(10),
                    resources=requests("100m", "256Mi", "1Gi"),
                    **system,
                ),
            )
            rules = DefaultRules(
                create=True,
                rules=RuleToggles(
                    kubeControllerManager=False,
                    kubeSchedulerAlerting=False,
                    kubeSchedulerRecording=False,
                    kubeProxy=False,
                ),
            )
        else:
            prometheus = spoke_prometheus(ctx, system)
            alertmanager = Alertmanager(enabled=False)
            rules = DefaultRules(create=False)  # rules are evaluated by the hub, on the series written there
        return KubePrometheusStackValues(
            defaultRules=rules,
            alertmanager=alertmanager,
            prometheus=prometheus,
            prometheusOperator=PrometheusOperator(
                resources=requests("100m", "256Mi", "1Gi"),
                # the chart's certgen job signs the webhook: cert-manager comes later (and only on the hub)
                admissionWebhooks=AdmissionWebhooks(patch=AdmissionPatch(enabled=True, **system)),
                **system,
            ),
            kube_state_metrics=KubeStateMetrics(resources=requests("100m", "256Mi", "2Gi"), **system),
            prometheus_node_exporter=NodeExporter(
                tolerations=EVERY_TAINT,
                resources=requests("50m", "64Mi", "256Mi"),
                prometheus=NodeExporterPrometheus(
                    monitor=NodeMonitor(
                        attachMetadata=AttachMetadata(node=True),
                        relabelings=pool_relabelings(ctx.cluster.pools),
                    )
                ),
            ),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "kube-prometheus-stack-operator": RoleReview(
                (READS_SECRETS,), "credentials monitors reference, and Prometheus' generated config"
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/kube-prometheus-stack-admission": Reviewed(
                (REWRITES_ADMISSION,),
                "the chart's hook Job writes the CA bundle of the operator's webhook configurations",
            ),
            f"{self.namespace}/kube-prometheus-stack-operator": Reviewed(
                (READS_SECRETS, MAKES_PRIVILEGED_PODS),
                "the Prometheus operator makes the Prometheus and Alertmanager StatefulSets and reads the Secrets their scrape and alert configurations name, wherever they live",
            ),
        }


PROMETHEUS_SERVICE = (
    f"{KubePrometheusStack.name}-prometheus"  # the chart's name for it: `<release>-prometheus`
)
