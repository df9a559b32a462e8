"""`otel-gateway`: the hub's gateway collector: OTLP in from every node collector, logs out to Loki;
and, with other clusters, the telemetry door of the site Gateway."""

from __future__ import annotations

from constructs.edge import Backend, Route
from constructs.site_watches import LogShippingWatch, Watch
from sitegen.components.base import ChartComponent, Layer, VaultSecretSpec
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.observability import PROJECT
from sitegen.components.observability.collector import (
    CHART,
    COLLECTOR_IMAGE,
    METRICS_PORT,
    OTLP_HTTP_PORT,
    CollectorConfig,
    OtelCollectorValues,
    OtlpHttpExporter,
    Pipeline,
    Pipelines,
    Presets,
    Service,
)
from sitegen.components.observability.kube_prometheus_stack import (
    NAMESPACE,
    PROMETHEUS_PORT,
    PROMETHEUS_SERVICE,
    KubePrometheusStack,
)
from sitegen.components.observability.loki import GATEWAY_SERVICE as LOKI_GATEWAY
from sitegen.components.observability.loki import LOKI_CLIENT, Loki, client_secret
from sitegen.components.observability.telemetry import HTPASSWD_VAULT_KEY, TELEMETRY_USERS
from sitegen.components.values import (
    ON,
    EnvVar,
    EnvVarSource,
    Pdb,
    SecretKeyRef,
    image,
    placed,
    requests,
)

SERVICE = "otel-gateway"


class OtelGateway(ChartComponent):
    name = "otel-gateway"
    chart = CHART
    project = PROJECT
    layer = Layer.SERVICES
    after = (KubePrometheusStack, Loki)
    namespace = NAMESPACE
    images = {COLLECTOR_IMAGE: "the log collectors"}

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """Its pair for Loki's gateway and, where other clusters deliver, the htpasswd lines ({SHA}) of
        their clients."""
        users = VaultSecretSpec(TELEMETRY_USERS, self.namespace, HTPASSWD_VAULT_KEY, (".htpasswd",))
        return [client_secret(self.namespace), *([users] if ctx.variant.spokes else [])]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [LogShippingWatch()]

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(Loki, (), "pushes logs to Loki's gateway")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def routes(self, ctx: ClusterContext) -> list[Route]:
        if not ctx.variant.spokes:
            return []
        return [
            Route(
                "telemetry",
                self.namespace,
                ctx.site.services.monitoring.telemetry_hostname,
                (
                    Backend(PROMETHEUS_SERVICE, PROMETHEUS_PORT, path="/api/v1/write"),
                    Backend(SERVICE, OTLP_HTTP_PORT, path="/v1/logs"),
                ),
                basic_auth=TELEMETRY_USERS,
            )
        ]

    def values(self, ctx: ClusterContext) -> OtelCollectorValues:
        loki = ctx.service_url(LOKI_GATEWAY, ctx.get(Loki).namespace)
        return OtelCollectorValues(
            mode="deployment",
            fullnameOverride=SERVICE,
            image=image(ctx.image(COLLECTOR_IMAGE)),
            replicaCount=2,
            resources=requests("500m", "1Gi", "4Gi"),
            # restricted, as its namespace enforces (the image's user is 10001)
            podSecurityContext={
                "runAsNonRoot": True,
                "runAsUser": 10001,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            securityContext={"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            presets=Presets(),
            ports={METRICS_PORT: ON},  # what the chart's ServiceMonitor scrapes
            podDisruptionBudget=Pdb(),
            extraEnvs=[
                EnvVar(
                    name="LOKI_AUTH",
                    valueFrom=EnvVarSource(secretKeyRef=SecretKeyRef(name=LOKI_CLIENT, key="basic")),
                )
            ],
            config=CollectorConfig(
                exporters={
                    "otlphttp/loki": OtlpHttpExporter(
                        endpoint=loki + "/otlp", headers={"Authorization": "Basic ${env:LOKI_AUTH}"}
                    )
                },
                service=Service(
                    pipelines=Pipelines(
                        logs=Pipeline(receivers=["otlp"], processors=["batch"], exporters=["otlphttp/loki"])
                    )
                ),
            ),
            **placed(ctx.system_placement),
        )
