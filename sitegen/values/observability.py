"""Values of the observability charts: kube-prometheus-stack, Grafana, Loki, OpenTelemetry.

The hub runs the full stack on its system pool. Any other cluster (the AIStor cluster of the
two-cluster variant) runs only node-level agents, a Prometheus agent and a log collector, both
shipping to the hub through the site Gateway under `services.monitoring.telemetry_hostname`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.apps import LOKI_NS, MONITORING_NS
from sitegen.layout import ClusterLayout, PoolLayout, VariantLayout
from sitegen.model import ROLE_PREFIX, Site
from sitegen.objectstore import s3_endpoint
from sitegen.values.base import Values, placed, requests

# Service names the charts derive from their release names (pinned by the app names in apps.py).
PROMETHEUS_SERVICE = "kube-prometheus-stack-prometheus"
ALERTMANAGER_SERVICE = "kube-prometheus-stack-alertmanager"
LOKI_GATEWAY = "loki-gateway"
GRAFANA_SERVICE = "grafana"
OTEL_GATEWAY = "otel-gateway"
OTLP_HTTP_PORT = 4318
GRAFANA_ADMIN_SECRET = "grafana-admin"
REMOTE_WRITE_SECRET = "remote-write"  # basic-auth pair of the agents, from the vault
TELEMETRY_USERS = "telemetry-users"  # htpasswd the Gateway checks the agents against
LOKI_S3_SECRET = "loki-s3"
AISTOR_CA_SECRET = "aistor-ca"
# The site CA's certificate, for clients outside the hub that reach the Gateway (internal-ca issuer only:
# an ACME certificate chains to the public roots the images already trust).
SITE_CA_SECRET = "site-ca-cert"
SITE_CA_KEY = "tls.crt"
SITE_CA_MOUNT = "/etc/site-ca"
ALL_TAINTS = [{"operator": "Exists"}]  # node agents: every pool, whatever its taints and effects


def trusts_site_ca(site: Site) -> bool:
    return site.services.certificates.issuer == "internal-ca"


def cluster_url(service: str, namespace: str, cluster: ClusterLayout, port: int | None = None) -> str:
    host = f"{service}.{namespace}.svc.{cluster.spec.dns_domain}"
    return f"http://{host}:{port}" if port else f"http://{host}"


def _volume(size_gb: int) -> dict[str, Any]:
    return {
        "volumeClaimTemplate": {
            "spec": {
                "storageClassName": LOCAL_NVME,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": f"{size_gb}G"}},
            }
        }
    }


def pool_relabelings(pools: tuple[PoolLayout, ...]) -> list[dict[str, Any]]:
    """Give node-level series a `node` and a `pool` label, read from the node's role label."""
    rules: list[dict[str, Any]] = [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}
    ]
    for pool in pools:
        meta = "__meta_kubernetes_node_labelpresent_" + _meta_name(ROLE_PREFIX + pool.role)
        rules.append(
            {
                "sourceLabels": [meta],
                "regex": "true",
                "targetLabel": "pool",
                "replacement": pool.name,
                "action": "replace",
            }
        )
    return rules


def _meta_name(label: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in label)


# Select every monitor of the cluster, not only those carrying the chart's release label.
EVERY_TARGET = {
    f"{kind}SelectorNilUsesHelmValues": False
    for kind in ("serviceMonitor", "podMonitor", "probe", "scrapeConfig")
}


class KubePrometheusStackValues(Values):
    crds: dict[str, Any] = {"enabled": True}
    # Grafana is its own app; the chart's Kubernetes dashboards still ship as ConfigMaps for it.
    grafana: dict[str, Any] = {"enabled": False, "forceDeployDashboards": True}
    defaultRules: dict[str, Any]
    alertmanager: dict[str, Any]
    prometheus: dict[str, Any]
    prometheusOperator: dict[str, Any]
    kubeStateMetrics: dict[str, bool] = {"enabled": True}
    kube_state_metrics: dict[str, Any] = Field(alias="kube-state-metrics")
    nodeExporter: dict[str, bool] = {"enabled": True}
    prometheus_node_exporter: dict[str, Any] = Field(alias="prometheus-node-exporter")
    # kubeadm keeps both bound to 127.0.0.1 (CIS 1.3.7, 1.4.2): not scraped, and no alerts that would
    # fire for the missing targets.
    kubeControllerManager: dict[str, bool] = {"enabled": False}
    kubeScheduler: dict[str, bool] = {"enabled": False}
    # Cilium replaces kube-proxy.
    kubeProxy: dict[str, bool] = {"enabled": False}
    # etcd serves /metrics over plain HTTP on :2381 (listen-metrics-urls in the kubeadm config).
    kubeEtcd: dict[str, Any] = {"enabled": True, "service": {"port": 2381, "targetPort": 2381}}


def kube_prometheus_stack_values(
    site: Site, layout: VariantLayout, cluster: ClusterLayout
) -> KubePrometheusStackValues:
    system = placed(cluster.system_pool.placement)
    monitoring = site.services.monitoring
    is_hub = cluster.name == layout.hub.name
    external_labels = {"cluster": cluster.name}
    if is_hub:
        prom = monitoring.prometheus
        prometheus: dict[str, Any] = {
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "prometheusSpec": {
                "replicas": prom.replicas,
                "podAntiAffinity": "hard",  # the two copies never share a node
                "retention": f"{prom.retention_days}d",
                "retentionSize": prom.retention_size,
                "storageSpec": _volume(prom.volume_gb),
                "externalLabels": external_labels,
                **EVERY_TARGET,
                "ruleSelectorNilUsesHelmValues": False,  # and every rule
                # the agents of the other clusters write here, through the Gateway
                "enableRemoteWriteReceiver": bool(layout.spokes),
                "resources": requests("4", "32Gi", "64Gi"),
                **system,
            },
        }
        alertmanager: dict[str, Any] = {
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "alertmanagerSpec": {
                "replicas": monitoring.alertmanager_replicas,
                "podAntiAffinity": "hard",
                "storage": _volume(10),
                "resources": requests("100m", "256Mi", "1Gi"),
                **system,
            },
        }
        rules: dict[str, Any] = {
            "create": True,
            "rules": {
                "kubeControllerManager": False,
                "kubeSchedulerAlerting": False,
                "kubeSchedulerRecording": False,
                "kubeProxy": False,
            },
        }
    else:
        hub = layout.hub
        prometheus = {
            "agentMode": True,
            "prometheusSpec": {
                "replicas": 1,
                "externalLabels": external_labels,
                **EVERY_TARGET,
                "remoteWrite": [
                    {
                        "url": f"https://{monitoring.telemetry_hostname}/api/v1/write",
                        "name": hub.name,
                        "basicAuth": {
                            "username": {"name": REMOTE_WRITE_SECRET, "key": "username"},
                            "password": {"name": REMOTE_WRITE_SECRET, "key": "password"},
                        },
                        **(
                            {"tlsConfig": {"ca": {"secret": {"name": SITE_CA_SECRET, "key": SITE_CA_KEY}}}}
                            if trusts_site_ca(site)
                            else {}
                        ),
                    }
                ],
                "resources": requests("500m", "2Gi", "8Gi"),
                **system,
            },
        }
        alertmanager = {"enabled": False}
        rules = {"create": False}  # rules are evaluated by the hub, on the series written there
    return KubePrometheusStackValues(
        defaultRules=rules,
        alertmanager=alertmanager,
        prometheus=prometheus,
        prometheusOperator={
            "resources": requests("100m", "256Mi", "1Gi"),
            # the chart's certgen job signs the webhook: cert-manager comes later (and only on the hub)
            "admissionWebhooks": {"patch": {"enabled": True, **system}},
            **system,
        },
        kube_state_metrics={"resources": requests("100m", "256Mi", "2Gi"), **system},
        prometheus_node_exporter={
            "tolerations": ALL_TAINTS,
            "resources": requests("50m", "64Mi", "256Mi"),
            "prometheus": {
                "monitor": {
                    "attachMetadata": {"node": True},
                    "relabelings": pool_relabelings(cluster.pools),
                }
            },
        },
    )


class SmartctlExporterValues(Values):
    # smartctl reads the NVMe SMART log through the device nodes: the chart runs it privileged.
    tolerations: list[dict[str, str]] = ALL_TAINTS
    resources: dict[str, Any]
    serviceMonitor: dict[str, Any] = {"enabled": True}


def smartctl_exporter_values(
    site: Site, layout: VariantLayout, cluster: ClusterLayout
) -> SmartctlExporterValues:
    return SmartctlExporterValues(resources=requests("20m", "32Mi", "128Mi"))


class GrafanaValues(Values):
    # one replica: a second needs a shared SQL database, which the site does not run (state is in a
    # local volume and everything that matters is provisioned from the repo)
    replicas: int = 1
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    persistence: dict[str, Any]
    admin: dict[str, str] = {
        "existingSecret": GRAFANA_ADMIN_SECRET,
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    grafana_ini: dict[str, Any] = Field(alias="grafana.ini")
    datasources: dict[str, Any]
    sidecar: dict[str, Any]
    serviceMonitor: dict[str, bool] = {"enabled": True}
    testFramework: dict[str, bool] = {"enabled": False}  # a helm-test pod Argo CD would never run


def grafana_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> GrafanaValues:
    monitoring = site.services.monitoring
    return GrafanaValues(
        resources=requests("200m", "512Mi", "2Gi"),
        persistence={
            "enabled": True,
            "type": "pvc",
            "storageClassName": LOCAL_NVME,
            "size": "20G",
        },
        grafana_ini={
            "server": {"root_url": f"https://{monitoring.grafana_hostname}/"},
            "analytics": {"check_for_updates": False, "reporting_enabled": False},
            "auth.anonymous": {"enabled": False},
        },
        datasources={
            "datasources.yaml": {
                "apiVersion": 1,
                "datasources": [
                    {
                        "name": "Prometheus",
                        "type": "prometheus",
                        "uid": "prometheus",
                        "url": cluster_url(PROMETHEUS_SERVICE, MONITORING_NS, cluster, 9090),
                        "access": "proxy",
                        "isDefault": True,
                    },
                    {
                        "name": "Loki",
                        "type": "loki",
                        "uid": "loki",
                        "url": cluster_url(LOKI_GATEWAY, LOKI_NS, cluster),
                        "access": "proxy",
                    },
                ],
            }
        },
        sidecar={
            # the site's dashboards (repo) and the chart dashboards of kube-prometheus-stack
            "dashboards": {
                "enabled": True,
                "label": "grafana_dashboard",
                "labelValue": "1",
                "searchNamespace": "ALL",
                "folderAnnotation": "grafana_folder",
                "provider": {"foldersFromFilesStructure": True},
            }
        },
        **placed(cluster.system_pool.placement),
    )


LOKI_SCHEMA_FROM = "2026-01-01"  # first day of the v13 TSDB schema; a schema change adds a dated entry


class LokiValues(Values):
    deploymentMode: str = "SimpleScalable"
    loki: dict[str, Any]
    write: dict[str, Any]
    read: dict[str, Any]
    backend: dict[str, Any]
    gateway: dict[str, Any]
    chunksCache: dict[str, Any]
    resultsCache: dict[str, Any]
    # the canary is a DaemonSet on every node: GPU and storage nodes run no probe of ours
    lokiCanary: dict[str, bool] = {"enabled": False}
    test: dict[str, bool] = {"enabled": False}
    minio: dict[str, bool] = {"enabled": False}
    monitoring: dict[str, Any] = {"serviceMonitor": {"enabled": True}}


def loki_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> LokiValues:
    logs = site.services.logs
    s3 = s3_endpoint(site, layout, cluster)
    system = placed(cluster.system_pool.placement)
    ca_mount = "/etc/aistor-ca"

    def component(replicas: int, cpu: str, memory: str, limit: str, volume: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "replicas": replicas,
            "maxUnavailable": 1,
            "resources": requests(cpu, memory, limit),
            # S3 keys reach Loki only as environment, expanded in its config (-config.expand-env)
            "extraArgs": ["-config.expand-env=true"],
            "extraEnvFrom": [{"secretRef": {"name": LOKI_S3_SECRET}}],
            "extraVolumes": [{"name": "aistor-ca", "secret": {"secretName": AISTOR_CA_SECRET}}],
            "extraVolumeMounts": [{"name": "aistor-ca", "mountPath": ca_mount, "readOnly": True}],
            **system,
        }
        if volume:
            out["persistence"] = {"storageClass": LOCAL_NVME, "size": f"{logs.volume_gb}G"}
        return out

    return LokiValues(
        loki={
            "auth_enabled": False,  # one tenant: the site
            "schemaConfig": {
                "configs": [
                    {
                        "from": LOKI_SCHEMA_FROM,
                        "store": "tsdb",
                        "object_store": "s3",
                        "schema": "v13",
                        "index": {"prefix": "loki_index_", "period": "24h"},
                    }
                ]
            },
            "storage": {
                "type": "s3",
                "bucketNames": {"chunks": logs.bucket, "ruler": logs.ruler_bucket},
                "s3": {
                    "endpoint": s3.host,
                    "region": s3.region,
                    "s3ForcePathStyle": True,
                    "insecure": False,
                    # expanded by Loki from the environment (-config.expand-env), never written here
                    "accessKeyId": "${AWS_ACCESS_KEY_ID}",
                    "secretAccessKey": "${AWS_SECRET_ACCESS_KEY}",
                    "http_config": {"ca_file": f"{ca_mount}/ca.crt"},
                },
            },
            "limits_config": {"retention_period": f"{logs.retention_days * 24}h"},
            "compactor": {"retention_enabled": True, "delete_request_store": "s3"},
        },
        write=component(3, "1", "4Gi", "8Gi", volume=True),
        read=component(3, "1", "4Gi", "8Gi", volume=False),
        backend=component(3, "500m", "2Gi", "4Gi", volume=True),
        gateway={"replicas": 2, "resources": requests("100m", "128Mi", "512Mi"), **system},
        chunksCache={"allocatedMemory": 4096, **system},
        resultsCache={"allocatedMemory": 1024, **system},
    )


class OtelOperatorValues(Values):
    replicaCount: int = 2
    pdb: dict[str, Any] = {"create": True, "minAvailable": 1}
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    manager: dict[str, Any]
    admissionWebhooks: dict[str, Any] = {
        "certManager": {"enabled": True},
        "autoGenerateCert": {"enabled": False},
    }


def otel_operator_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> OtelOperatorValues:
    return OtelOperatorValues(
        manager={
            "collectorImage": _collector_image(site),
            "resources": requests("100m", "128Mi", "512Mi"),
            "serviceMonitor": {"enabled": True},
        },
        **placed(cluster.system_pool.placement),
    )


class OtelCollectorValues(Values):
    mode: str
    fullnameOverride: str
    image: dict[str, str]
    command: dict[str, str] = {"name": "otelcol-k8s"}  # the binary of the k8s distribution image
    extraEnvs: list[dict[str, Any]] | None = None
    extraVolumes: list[dict[str, Any]] | None = None
    extraVolumeMounts: list[dict[str, Any]] | None = None
    replicaCount: int | None = None
    nodeSelector: dict[str, str] | None = None
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    presets: dict[str, Any]
    config: dict[str, Any]
    podDisruptionBudget: dict[str, Any] | None = None
    serviceMonitor: dict[str, bool] = {"enabled": True}
    ports: dict[str, Any] | None = None


def _collector_image(site: Site) -> dict[str, str]:
    image = site.versions.images["opentelemetry-collector"]
    return {"repository": image.repository, "tag": image.tag}


def otel_node_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> OtelCollectorValues:
    """One collector per node: container logs of every pool, to the hub's gateway collector."""
    extra_envs = None
    volumes = mounts = None
    if cluster.name == layout.hub.name:
        exporter: dict[str, Any] = {
            "endpoint": cluster_url(OTEL_GATEWAY, MONITORING_NS, cluster, OTLP_HTTP_PORT)
        }
    else:
        # through the site Gateway, which asks for the same basic-auth pair as remote write
        exporter = {
            "endpoint": f"https://{site.services.monitoring.telemetry_hostname}",
            "headers": {"Authorization": "Basic ${env:TELEMETRY_AUTH}"},
        }
        extra_envs = [
            {
                "name": "TELEMETRY_AUTH",
                "valueFrom": {"secretKeyRef": {"name": REMOTE_WRITE_SECRET, "key": "basic"}},
            }
        ]
        if trusts_site_ca(site):
            exporter["tls"] = {"ca_file": f"{SITE_CA_MOUNT}/{SITE_CA_KEY}"}
            volumes = [{"name": "site-ca", "secret": {"secretName": SITE_CA_SECRET}}]
            mounts = [{"name": "site-ca", "mountPath": SITE_CA_MOUNT, "readOnly": True}]
    return OtelCollectorValues(
        mode="daemonset",
        fullnameOverride="otel-node",
        image=_collector_image(site),
        extraEnvs=extra_envs,
        extraVolumes=volumes,
        extraVolumeMounts=mounts,
        tolerations=ALL_TAINTS,
        resources=requests("100m", "256Mi", "1Gi"),
        # storeCheckpoints keeps file offsets across restarts (and makes the chart read logs as root)
        presets={
            "logsCollection": {"enabled": True, "storeCheckpoints": True},
            "kubernetesAttributes": {"enabled": True},
        },
        config={
            "exporters": {"otlphttp": exporter},
            "service": {
                "pipelines": {
                    "logs": {
                        "receivers": ["filelog"],
                        "processors": ["k8sattributes", "batch"],
                        "exporters": ["otlphttp"],
                    }
                }
            },
        },
    )


def otel_gateway_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> OtelCollectorValues:
    """The hub's gateway collector: OTLP in from every node collector, logs out to Loki."""
    return OtelCollectorValues(
        mode="deployment",
        fullnameOverride=OTEL_GATEWAY,
        image=_collector_image(site),
        replicaCount=2,
        resources=requests("500m", "1Gi", "4Gi"),
        presets={},
        podDisruptionBudget={"enabled": True, "minAvailable": 1},
        config={
            "exporters": {
                "otlphttp/loki": {"endpoint": cluster_url(LOKI_GATEWAY, LOKI_NS, cluster) + "/otlp"}
            },
            "service": {
                "pipelines": {
                    "logs": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["otlphttp/loki"]}
                }
            },
        },
        **placed(cluster.system_pool.placement),
    )
