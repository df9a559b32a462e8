"""`otel-node`: one log collector per node, every pool: container logs, and the API server's audit log
on the control-plane nodes, to the hub's gateway collector (in-cluster on the hub, through the site
Gateway from the other clusters)."""

from __future__ import annotations

from collections.abc import Mapping

from constructs.kubeadm import AUDIT_LOG_DIR
from constructs.site_watches import LogShippingWatch, Watch
from sitegen.components.base import (
    EVERY_POOL,
    ChartComponent,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    VaultSecretSpec,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.gateway import Gateway
from sitegen.components.flows import Flow
from sitegen.components.observability import PROJECT
from sitegen.components.observability.collector import (
    CHART,
    COLLECTOR_IMAGE,
    METRICS_PORT,
    OTLP_HTTP_PORT,
    RECEIVER_PORTS,
    CollectorConfig,
    ExporterTls,
    FileLogOperator,
    FileLogReceiver,
    OtelCollectorValues,
    OtlpHttpExporter,
    Pipeline,
    Pipelines,
    Preset,
    Presets,
    Service,
)
from sitegen.components.observability.kube_prometheus_stack import (
    AGENTS_NAMESPACE,
    KubePrometheusStack,
)
from sitegen.components.observability.otel_gateway import SERVICE as GATEWAY_SERVICE
from sitegen.components.observability.otel_gateway import OtelGateway
from sitegen.components.observability.telemetry import (
    REMOTE_WRITE_SECRET,
    SITE_CA_KEY,
    SITE_CA_SECRET,
    delivery_credentials,
)
from sitegen.components.values import (
    EVERY_TAINT,
    EnvVar,
    EnvVarSource,
    HostPathVolumeSource,
    SecretKeyRef,
    Toggle,
    Volume,
    VolumeMount,
    image,
    requests,
    secret_volume,
)

SITE_CA_MOUNT = "/etc/site-ca"
AUDIT_RECEIVER = "file_log/audit"
AUDIT_SERVICE = "kube-apiserver-audit"


class OtelNode(ChartComponent):
    name = "otel-node"
    chart = CHART
    project = PROJECT
    layer = Layer.SERVICES
    after = (KubePrometheusStack,)  # its ServiceMonitor
    namespace = AGENTS_NAMESPACE
    # it creates the node agents' namespace (node-exporter and smartctl run there too)
    security = NamespaceSecurity(
        "privileged",
        "node agents: node-exporter shares the host's network and PID namespaces, smartctl reads the "
        "NVMe devices, the log collector reads /var/log/pods",
    )
    images = {COLLECTOR_IMAGE: "the log collectors"}

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """Outside the hub, what its log collector delivers to the hub with."""
        return [] if ctx.is_hub else delivery_credentials(self.namespace, ctx.site)

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [LogShippingWatch()]

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        # to the hub's gateway collector; a spoke ships through the hub's Gateway
        if ctx.is_hub:
            return [Flow(OtelGateway, (OTLP_HTTP_PORT,), "logs to the gateway collector")]
        return [Flow(Gateway, (), "logs to the hub's telemetry route")]  # its address there, on 443

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key("DaemonSet", f"{self.name}-agent"): NodeAgent(
                frozenset({EVERY_POOL}), "container logs of every node"
            )
        }

    def values(self, ctx: ClusterContext) -> OtelCollectorValues:
        extra_envs = None
        # The API server's audit log, on the control-plane hosts (elsewhere the directory is empty):
        # shipped like container logs, so that it outlives the host's rotation (kubeadm.py keeps
        # 10 x 100 MB) and is searchable in Loki as service_name="kube-apiserver-audit".
        volumes = [
            Volume(
                name="audit-log", hostPath=HostPathVolumeSource(path=AUDIT_LOG_DIR, type="DirectoryOrCreate")
            )
        ]
        mounts = [VolumeMount(name="audit-log", mountPath=AUDIT_LOG_DIR, readOnly=True)]
        if ctx.is_hub:
            exporter = OtlpHttpExporter(
                endpoint=ctx.service_url(GATEWAY_SERVICE, ctx.get(OtelGateway).namespace, OTLP_HTTP_PORT)
            )
        else:
            # through the site Gateway, which asks for the same basic-auth pair as remote write
            tls = None
            if ctx.site.services.certificates.internal_ca:
                tls = ExporterTls(ca_file=f"{SITE_CA_MOUNT}/{SITE_CA_KEY}")
                volume, mount = secret_volume("site-ca", SITE_CA_SECRET, SITE_CA_MOUNT)
                volumes.append(volume)
                mounts.append(mount)
            exporter = OtlpHttpExporter(
                endpoint=f"https://{ctx.site.services.monitoring.telemetry_hostname}",
                headers={"Authorization": "Basic ${env:TELEMETRY_AUTH}"},
                tls=tls,
            )
            extra_envs = [
                EnvVar(
                    name="TELEMETRY_AUTH",
                    valueFrom=EnvVarSource(secretKeyRef=SecretKeyRef(name=REMOTE_WRITE_SECRET, key="basic")),
                )
            ]
        return OtelCollectorValues(
            mode="daemonset",
            fullnameOverride=self.name,
            image=image(ctx.image(COLLECTOR_IMAGE)),
            extraEnvs=extra_envs,
            extraVolumes=volumes,
            extraVolumeMounts=mounts,
            tolerations=EVERY_TAINT,
            # a log shipper: no receiver port, so none on every node's address (the chart opens six
            # host ports by default, for traces and metrics nothing here sends or keeps); its own
            # metrics on the pod's address, for the chart's PodMonitor
            ports={
                **{port: Toggle(enabled=False) for port in RECEIVER_PORTS},
                METRICS_PORT: Toggle(enabled=True),
            },
            podMonitor=Toggle(enabled=True),
            resources=requests("100m", "256Mi", "1Gi"),
            # storeCheckpoints keeps file offsets across restarts (and makes the chart read logs as root)
            presets=Presets(
                logsCollection=Preset(enabled=True, storeCheckpoints=True),
                kubernetesAttributes=Preset(enabled=True),
            ),
            config=_log_config(exporter),
        )


def _log_config(exporter: OtlpHttpExporter) -> CollectorConfig:
    """Container logs and, on the control-plane hosts, the API server's audit log, to `exporter`."""
    return CollectorConfig(
        receivers={
            AUDIT_RECEIVER: FileLogReceiver(
                include=[f"{AUDIT_LOG_DIR}/*.log"],
                start_at="beginning",
                storage="file_storage",  # the extension storeCheckpoints adds
                include_file_path=True,
                operators=[
                    FileLogOperator(type="add", field='resource["service.name"]', value=AUDIT_SERVICE),
                    FileLogOperator(
                        type="add", field='resource["k8s.node.name"]', value="${env:K8S_NODE_NAME}"
                    ),
                ],
            )
        },
        exporters={"otlphttp": exporter},
        service=Service(
            pipelines=Pipelines(
                logs=Pipeline(
                    receivers=["filelog"],
                    processors=["k8sattributes", "batch"],
                    exporters=["otlphttp"],
                ),
                logs_audit=Pipeline(receivers=[AUDIT_RECEIVER], processors=["batch"], exporters=["otlphttp"]),
            )
        ),
    )
