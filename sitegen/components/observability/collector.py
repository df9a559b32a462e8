"""Values of the opentelemetry-collector chart, which two components deploy: `otel-node` (a collector
per node) and `otel-gateway` (the hub's gateway collector)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sitegen.components.values import (
    EnvVar,
    Image,
    Pdb,
    Placed,
    Resources,
    Toggle,
    Values,
    Volume,
    VolumeMount,
)

CHART = "opentelemetry-collector"
COLLECTOR_IMAGE = "opentelemetry-collector"
OTLP_HTTP_PORT = 4318
# The chart's receiver ports (values.yaml `ports`), each a host port too in daemonset mode.
RECEIVER_PORTS = ("otlp", "otlp-http", "jaeger-compact", "jaeger-thrift", "jaeger-grpc", "zipkin")
# The collector's own metrics (8888, never a host port): the chart's ServiceMonitor and PodMonitor
# scrape the port of this name, which it leaves out of the pod and the Service unless enabled.
METRICS_PORT = "metrics"


class Command(Values):
    name: str


class Preset(Values):
    enabled: bool
    storeCheckpoints: bool | None = None


class Presets(Values):
    logsCollection: Preset | None = None
    kubernetesAttributes: Preset | None = None


class Pipeline(Values):
    receivers: list[str]
    processors: list[str]
    exporters: list[str]


class Pipelines(Values):
    logs: Pipeline
    logs_audit: Pipeline | None = Field(default=None, alias="logs/audit")


class FileLogOperator(Values):
    type: Literal["add"]
    field: str
    value: str


class FileLogReceiver(Values):
    include: list[str]
    start_at: Literal["beginning", "end"]
    storage: str  # an extension that keeps file offsets across restarts
    include_file_path: bool
    operators: list[FileLogOperator]


class Service(Values):
    pipelines: Pipelines


class ExporterTls(Values):
    ca_file: str


class OtlpHttpExporter(Values):
    endpoint: str
    headers: dict[str, str] | None = None
    tls: ExporterTls | None = None


class CollectorConfig(Values):
    # the collector's own config: receivers and exporters by `<type>/<name>` (free keys), the rest typed
    receivers: dict[str, FileLogReceiver] | None = None
    exporters: dict[str, OtlpHttpExporter]
    service: Service


class OtelCollectorValues(Placed):
    mode: Literal["daemonset", "deployment"]
    fullnameOverride: str
    image: Image
    command: Command = Command(name="otelcol-k8s")  # the binary of the k8s distribution image
    extraEnvs: list[EnvVar] | None = None
    extraVolumes: list[Volume] | None = None
    extraVolumeMounts: list[VolumeMount] | None = None
    replicaCount: int | None = None
    resources: Resources
    presets: Presets
    config: CollectorConfig
    podDisruptionBudget: Pdb | None = None
    serviceMonitor: Toggle = Toggle(enabled=True)
    podSecurityContext: dict[str, Any] | None = None
    securityContext: dict[str, Any] | None = None
    podMonitor: Toggle | None = None
    ports: dict[Literal[(*RECEIVER_PORTS, METRICS_PORT)], Toggle] | None = None
