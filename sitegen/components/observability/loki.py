"""`loki`: logs in SimpleScalable mode on the hub, chunks and rules in AIStor buckets."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, State, VaultSecretSpec
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.observability import PROJECT
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.s3 import S3Access, S3Grant, s3_vault_key
from sitegen.components.storage.aistor import CA_SECRET as AISTOR_CA_SECRET
from sitegen.components.storage.aistor import AIStor, ca_vault_secret
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.values import (
    OFF,
    EnvFromSource,
    Placed,
    Resources,
    SecretRef,
    Toggle,
    Values,
    Volume,
    VolumeMount,
    placed,
    requests,
    secret_volume,
)

S3_SECRET = "loki-s3"  # AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, from the vault
S3_USER = "loki"
S3_VAULT_KEY = s3_vault_key(S3_USER)
SCHEMA_FROM = "2026-01-01"  # first day of the v13 TSDB schema; a schema change adds a dated entry
CA_MOUNT = "/etc/aistor-ca"
# Loki's gateway asks every client for basic auth: it checks the htpasswd line (hash only) of
# GATEWAY_USERS; its clients (Grafana, the gateway collector) read the pair as LOKI_CLIENT.
GATEWAY_USERS = "loki-gateway-users"
GATEWAY_USERS_VAULT_KEY = "loki/htpasswd"
LOKI_CLIENT = "loki-client"  # LOKI_USERNAME, LOKI_PASSWORD and `basic` (base64 of user:password)
LOKI_CLIENT_VAULT_KEY = "loki/client"


class SchemaIndex(Values):
    prefix: str
    period: str


class SchemaPeriod(Values):
    from_: str = Field(alias="from")
    store: Literal["tsdb"]
    object_store: Literal["s3"]
    schema_: str = Field(alias="schema")
    index: SchemaIndex


class SchemaConfig(Values):
    configs: list[SchemaPeriod]


class BucketNames(Values):
    chunks: str
    ruler: str


class HttpConfig(Values):
    ca_file: str


class S3(Values):
    endpoint: str
    region: str
    s3ForcePathStyle: bool
    insecure: bool
    accessKeyId: str
    secretAccessKey: str
    http_config: HttpConfig


class Storage(Values):
    type: Literal["s3"]
    bucketNames: BucketNames
    s3: S3


class Limits(Values):
    retention_period: str


class Compactor(Values):
    retention_enabled: bool
    delete_request_store: str


class LokiConfig(Values):
    auth_enabled: bool
    schemaConfig: SchemaConfig
    storage: Storage
    limits_config: Limits
    compactor: Compactor


class Persistence(Values):
    storageClass: str
    size: str


class Target(Placed):
    """One of the write, read and backend targets: scaled apart, S3 keys from the environment."""

    replicas: int
    maxUnavailable: int
    resources: Resources
    extraArgs: list[str]
    extraEnvFrom: list[EnvFromSource]
    extraVolumes: list[Volume]
    extraVolumeMounts: list[VolumeMount]
    persistence: Persistence | None = None


class BasicAuth(Values):
    enabled: bool
    existingSecret: str  # holds `.htpasswd`; without it the chart hashes a password from values


class Gateway(Placed):
    replicas: int
    resources: Resources
    basicAuth: BasicAuth


class Cache(Placed):
    allocatedMemory: int


class ServiceMonitorOn(Values):
    serviceMonitor: Toggle


class LokiRbac(Values):
    namespaced: bool


class RulesSidecar(Values):
    resource: Literal["configmap", "secret", "both"]


class Sidecar(Values):
    rules: RulesSidecar


class LokiValues(Values):
    deploymentMode: Literal["SimpleScalable"] = "SimpleScalable"
    loki: LokiConfig
    write: Target
    read: Target
    backend: Target
    gateway: Gateway
    chunksCache: Cache
    resultsCache: Cache
    # the canary is a DaemonSet on every node: GPU and storage nodes run no probe of ours
    lokiCanary: Toggle = OFF
    test: Toggle = OFF
    minio: Toggle = OFF
    monitoring: ServiceMonitorOn = ServiceMonitorOn(serviceMonitor=Toggle(enabled=True))
    # The rules sidecar reads ConfigMaps of Loki's own namespace through a Role: by default it gets
    # a ClusterRole that reads every Secret of the cluster (checkov CKV2_K8S_5).
    rbac: LokiRbac = LokiRbac(namespaced=True)
    sidecar: Sidecar = Sidecar(rules=RulesSidecar(resource="configmap"))


def client_secret(namespace: str) -> VaultSecretSpec:
    """The pair a client of Loki's gateway (Grafana, the telemetry gateway) reads and writes logs with."""
    return VaultSecretSpec(
        LOKI_CLIENT, namespace, LOKI_CLIENT_VAULT_KEY, ("username", "password"),
        {
            "LOKI_USERNAME": "{{ .username }}",
            "LOKI_PASSWORD": "{{ .password }}",
            "basic": '{{ printf "%s:%s" .username .password | b64enc }}',
        },
    )  # fmt: skip


class Loki(ChartComponent):
    name = "loki"
    modelled_values = {"loki.limits_config.retention_period": "services.yaml: logs.retention_days"}
    chart = "loki"
    project = PROJECT
    layer = Layer.SERVICES
    after = (
        KubePrometheusStack,
        LocalNvme,
    )  # its ServiceMonitors; its volumes' class; its S3 keys and the AIStor CA
    namespace = "loki"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(AIStor, (), "chunks and rules in AIStor (S3)")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def state(self, ctx: ClusterContext) -> list[State]:
        bucket = ctx.site.services.logs.bucket
        return [
            State(f"{self.name}-write", "logs received and not yet flushed to AIStor (the ingesters' WAL)", "logs",
                  copies=("each stream on 3 writers (replication factor 3): a node lost loses none",
                          f"flushed to s3://{bucket}/ in chunks")),
            State(f"{self.name}-backend", "the compactor's and the index gateway's working files", "cache",
                  without_copy=f"rebuilt from the index and chunks in s3://{bucket}/"),
        ]  # fmt: skip

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """Its S3 keys and the AIStor CA, and its gateway's users (htpasswd)."""
        s3_keys = {"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"}
        return [
            VaultSecretSpec(S3_SECRET, self.namespace, S3_VAULT_KEY, ("access_key", "secret_key"), s3_keys),
            ca_vault_secret(self.namespace),
            VaultSecretSpec(GATEWAY_USERS, self.namespace, GATEWAY_USERS_VAULT_KEY, (".htpasswd",)),
        ]

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        logs = ctx.site.services.logs
        return [S3Access(S3_USER, (S3Grant(logs.bucket), S3Grant(logs.ruler_bucket)))]

    def values(self, ctx: ClusterContext) -> LokiValues:
        logs = ctx.site.services.logs
        s3 = AIStor.s3_endpoint(ctx.site, ctx.cluster)
        system = placed(ctx.system_placement)
        ca_volume, ca_mount = secret_volume("aistor-ca", AISTOR_CA_SECRET, CA_MOUNT)

        def target(replicas: int, cpu: str, memory: str, limit: str, volume: bool) -> Target:
            return Target(
                replicas=replicas,
                maxUnavailable=1,
                resources=requests(cpu, memory, limit),
                # S3 keys reach Loki only as environment, expanded in its config (-config.expand-env)
                extraArgs=["-config.expand-env=true"],
                extraEnvFrom=[EnvFromSource(secretRef=SecretRef(name=S3_SECRET))],
                extraVolumes=[ca_volume],
                extraVolumeMounts=[ca_mount],
                persistence=Persistence(storageClass=LOCAL_NVME, size=f"{logs.volume_gb}G")
                if volume
                else None,
                **system,
            )

        return LokiValues(
            loki=LokiConfig(
                auth_enabled=False,  # one tenant: the site
                schemaConfig=SchemaConfig(
                    configs=[
                        SchemaPeriod(
                            from_=SCHEMA_FROM,
                            store="tsdb",
                            object_store="s3",
                            schema_="v13",
                            index=SchemaIndex(prefix="loki_index_", period="24h"),
                        )
                    ]
                ),
                storage=Storage(
                    type="s3",
                    bucketNames=BucketNames(chunks=logs.bucket, ruler=logs.ruler_bucket),
                    s3=S3(
                        endpoint=s3.host,
                        region=s3.region,
                        s3ForcePathStyle=True,
                        insecure=False,
                        # expanded by Loki from the environment (-config.expand-env), never written here
                        accessKeyId="${AWS_ACCESS_KEY_ID}",
                        secretAccessKey="${AWS_SECRET_ACCESS_KEY}",
                        http_config=HttpConfig(ca_file=f"{CA_MOUNT}/ca.crt"),
                    ),
                ),
                limits_config=Limits(retention_period=f"{logs.retention_days * 24}h"),
                compactor=Compactor(retention_enabled=True, delete_request_store="s3"),
            ),
            write=target(3, "1", "4Gi", "8Gi", volume=True),
            read=target(3, "1", "4Gi", "8Gi", volume=False),
            backend=target(3, "500m", "2Gi", "4Gi", volume=True),
            gateway=Gateway(
                replicas=2,
                resources=requests("100m", "128Mi", "512Mi"),
                basicAuth=BasicAuth(enabled=True, existingSecret=GATEWAY_USERS),
                **system,
            ),
            chunksCache=Cache(allocatedMemory=4096, **system),
            resultsCache=Cache(allocatedMemory=1024, **system),
        )


GATEWAY_SERVICE = f"{Loki.name}-gateway"  # the chart's name for it: `<release>-gateway`
