"""config/services.yaml: the choices of the platform services (certificates, gateway, monitoring,
logs, registry, serving), and the checks that span other files."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlparse

from pydantic import Field, field_validator, model_validator

from sitegen.model.clusters import Cluster
from sitegen.model.cron import longest_gap_seconds
from sitegen.model.fields import Address, BucketName, ConfigError, DnsLabel, DnsName, HttpsUrl, Strict
from sitegen.model.hardware import Hardware
from sitegen.model.pools import INFRA_ROLE, Pool
from sitegen.model.storage import Storage
from sitegen.model.tenants import Tenant, TenantQuota

RETENTION_FILL = 0.85  # share of a Prometheus volume its blocks may fill


class Acme(Strict):
    server: HttpsUrl
    email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+$")]


class Certificates(Strict):
    issuer: Literal["internal-ca", "acme"]
    acme: Acme | None = None

    @property
    def internal_ca(self) -> bool:
        """Certificates chain to the site CA, which clients must be given (an ACME certificate chains
        to the public roots images already trust)."""
        return self.issuer == "internal-ca"


class GatewayConfig(Strict):
    address: Address


class Prometheus(Strict):
    replicas: Annotated[int, Field(ge=1, le=5)] = 2
    retention_days: Annotated[int, Field(ge=1)]
    volume_gb: Annotated[int, Field(ge=20)]  # per replica, on the system pool's local NVMe

    @property
    def retention_size(self) -> str:
        """Prometheus deletes old blocks at this size, before the volume fills (WAL and compaction
        need headroom)."""
        return f"{int(self.volume_gb * RETENTION_FILL)}GB"


class GrafanaSso(Strict):
    """Grafana's login through the site's OIDC provider (the issuer Argo CD uses); its roles follow
    Argo CD's groups (admin: Admin, readonly: Viewer) and anyone else is refused. Grafana's OAuth
    client takes the provider's endpoints, not its discovery document."""

    client_id: Annotated[str, Field(min_length=1)]
    auth_url: HttpsUrl
    token_url: HttpsUrl
    api_url: HttpsUrl  # the userinfo endpoint


class Monitoring(Strict):
    prometheus: Prometheus
    alertmanager_replicas: Annotated[int, Field(ge=1, le=5)] = 3
    grafana_hostname: DnsName
    grafana_sso: GrafanaSso
    # Where the agents of other clusters deliver to the hub, through the Gateway: metrics by Prometheus
    # remote write, logs by OTLP.
    telemetry_hostname: DnsName
    # Grafana's users, preferences, service accounts and the dashboards made in its UI
    grafana_database: Database


class Logs(Strict):
    retention_days: Annotated[int, Field(ge=1)]
    bucket: BucketName  # the chunk and index bucket in AIStor
    ruler_bucket: BucketName
    volume_gb: Annotated[int, Field(ge=1)]  # per write/backend replica: WAL and compactor scratch


class ProxyCache(Strict):
    type: Literal["docker-hub", "docker-registry", "github-ghcr", "quay", "harbor"]
    url: HttpsUrl  # what Harbor's registry endpoint takes

    @property
    def registry(self) -> str:
        """The registry name images carry (Docker Hub's URL is its web site, its images say docker.io)."""
        return "docker.io" if self.type == "docker-hub" else urlparse(self.url).hostname or self.url

    @property
    def api(self) -> str:
        """Where a client pulls from without the cache."""
        return "https://registry-1.docker.io" if self.type == "docker-hub" else self.url


Cron = Annotated[str, Field(pattern=r"^(\S+\s+){4}\S+$")]  # five fields, as a CronJob takes them


class BackupSchedule(Strict):
    schedule: Cron  # UTC
    retention_days: Annotated[int, Field(ge=1)]

    @field_validator("schedule")
    @classmethod
    def _bounded(cls, schedule: str) -> str:
        longest_gap_seconds(schedule)  # its staleness alert needs the longest gap between two runs
        return schedule

    @property
    def longest_gap_seconds(self) -> int:
        return longest_gap_seconds(self.schedule)


class Database(Strict):
    """A service's PostgreSQL (CloudNativePG): instances on as many system-pool nodes, one primary and
    synchronous standbys (a commit is on two nodes before Harbor hears of it); every WAL segment
    archived to `bucket` in AIStor (at most `archive_timeout_minutes` behind), base backups on
    `backups`; a logical dump on `dump` to the second backup target, outside AIStor."""

    instances: Annotated[int, Field(ge=1, le=5)] = 3  # 1: no standby, a node lost stops Harbor
    volume_gb: Annotated[int, Field(ge=1)] = 50
    wal_volume_gb: Annotated[int, Field(ge=1)] = 20
    bucket: BucketName
    archive_timeout_minutes: Annotated[int, Field(ge=1, le=60)] = 5
    backups: BackupSchedule
    dump: BackupSchedule


class Registry(Strict):
    hostname: DnsName
    # Harbor's login through the site's OIDC provider (gitops.argocd.sso's issuer); its client secret
    # is the vault's (harbor/oidc). The local admin stays for break-glass only.
    sso_client_id: Annotated[str, Field(min_length=1)]
    storage: Literal["aistor", "powerscale"]
    bucket: BucketName  # with storage aistor
    powerscale_class: str = "archive"  # with storage powerscale: the class of the image volume
    volume_gb: Annotated[int, Field(ge=1)]  # registry volume with storage powerscale
    # Harbor projects that pull through to these registries: `<hostname>/<project>/<image>`.
    proxy_cache: dict[DnsLabel, ProxyCache] = Field(min_length=1)
    database: Database


class ServedModel(Strict):
    name: DnsLabel
    source: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$")]  # Hugging Face id
    replicas: Annotated[int, Field(ge=1)] = 1
    max_model_len: Annotated[int, Field(ge=1024)]
    cache_gb: Annotated[int, Field(ge=1)]  # weights cache on the node's local NVMe


class Serving(Strict):
    hostname: DnsName
    tenant: DnsLabel  # whose namespace and GPU quota the model servers use
    router_replicas: Annotated[int, Field(ge=1)] = 2
    routing: Literal["roundrobin", "session", "prefixaware", "kvaware"] = "roundrobin"
    models: list[ServedModel] = Field(min_length=1)


class VeleroBackups(Strict):
    platform: BackupSchedule  # the site's namespaces and the cluster-scoped objects
    tenants: BackupSchedule  # tenant namespaces, with CSI snapshots of their volumes


POWERSCALE_S3_PORT = 9021  # OneFS's S3 service over TLS (9020 is plain HTTP)


class ExternalS3(Strict):
    """An S3 service of the site's choosing outside AIStor (another site's object store, a cloud)."""

    host: DnsName
    port: Annotated[int, Field(ge=1, le=65535)] = 443


MAX_SECOND_BUCKET = 53  # a consumer's bucket appends `-<consumer>` (63 characters at most in all)


class SecondTarget(Strict):
    """A second copy outside AIStor's failure domain, on its own schedules: each cluster's etcd and its
    PKI (the CAs kubeadm keeps on the control-plane hosts, encrypted to a recipient certificate whose
    key is kept offline), and every namespace's objects through Velero. Tenant volume data stays in
    its CSI snapshots on PowerScale (Velero's data mover is not deployed): `plan` says so per data class.
    `powerscale`: the S3 service of PowerScale's access zone, on its SmartConnect name."""

    name: DnsLabel  # Velero's location, the CronJobs' suffix, the vault keys' folder
    s3: Literal["powerscale"] | ExternalS3
    region: str = "us-east-1"  # the region requests are signed for
    bucket: BucketName  # the buckets' common name: one bucket per consumer, `<bucket>-<consumer>`
    # every copy is locked (S3 Object Lock, COMPLIANCE) this long: no key, the owner's included,
    # overwrites or deletes it before; shorter than every retention below
    lock_days: Annotated[int, Field(ge=1)] = 7
    etcd: BackupSchedule
    velero: BackupSchedule
    pki: BackupSchedule

    def bucket_of(self, consumer: str) -> str:
        """The bucket of one consumer: no key writes where another's copies are."""
        return f"{self.bucket}-{consumer}"

    @model_validator(mode="after")
    def _locks_end_before_the_copies_go(self) -> SecondTarget:
        if len(self.bucket) > MAX_SECOND_BUCKET:
            raise ValueError(
                f"bucket: {len(self.bucket)} characters; the consumers' buckets add up to "
                f"{63 - MAX_SECOND_BUCKET} more (at most {MAX_SECOND_BUCKET})"
            )
        for name in ("etcd", "velero", "pki"):
            schedule: BackupSchedule = getattr(self, name)
            if schedule.retention_days <= self.lock_days:
                raise ValueError(
                    f"{name}.retention_days: {schedule.retention_days} days, but copies are locked for "
                    f"lock_days {self.lock_days}: keep them longer"
                )
        return self


class Backups(Strict):
    """Backups into AIStor: each cluster's etcd snapshots (kept by a lifecycle rule) and its objects
    through Velero (kept by Velero's TTL), under `etcd/` and `velero/` of one bucket; and a second
    copy on `second`."""

    bucket: BucketName
    etcd: BackupSchedule
    velero: VeleroBackups
    second: SecondTarget


class NcclCheck(Strict):
    schedule: Cron  # UTC
    nodes: Annotated[int, Field(ge=2)]  # across nodes: the rails, not only NVLink (at most the pool's)
    # below this share of the nodes' NDR bandwidth (rails x link) the run fails and alerts
    min_fraction: Annotated[float, Field(gt=0, le=1)]


class DcgmCheck(Strict):
    schedule: Cron  # UTC
    level: Literal[1, 2, 3, 4]  # dcgmi diag -r: 1 quick, 2 medium (minutes), 3-4 long (an hour and more)


class Health(Strict):
    """Periodic checks on idle GPU nodes, at the lowest Kueue priority (any other work preempts them)."""

    nccl: NcclCheck
    dcgm: DcgmCheck
    max_age_days: Annotated[int, Field(ge=1)]  # alert when no check has passed for this long
    # dcgmi diag level of a new or repaired GPU node's burn-in, before it takes work (RUNBOOK)
    burn_in_level: Literal[2, 3, 4] = 3
    # the most GPU nodes the guard cordons by itself (a fatal Xid, a row-remap failure, an NDR link
    # down); past it the fault is likelier the fabric's than the nodes', and a person decides
    auto_cordon_max_nodes: Annotated[int, Field(ge=1)] = 2


class Services(Strict):
    certificates: Certificates
    gateway: GatewayConfig
    monitoring: Monitoring
    logs: Logs
    registry: Registry
    serving: Serving
    backups: Backups
    health: Health

    @property
    def databases(self) -> dict[tuple[str, ...], Database]:
        """The site's PostgreSQL databases, by their field in services.yaml."""
        return {
            ("services", "registry", "database"): self.registry.database,
            ("services", "monitoring", "grafana_database"): self.monitoring.grafana_database,
        }


def check_services(
    services: Services,
    *,
    clusters: dict[str, Cluster],
    pools: dict[str, Pool],
    hardware: dict[str, Hardware],
    storage: Storage,
    tenants: dict[str, Tenant],
) -> None:
    certs = services.certificates
    if certs.issuer == "acme" and certs.acme is None:
        raise ConfigError(("services", "certificates", "acme"), "issuer acme needs the acme server and email")
    address = services.gateway.address
    if not any(address in c.load_balancer_cidr for c in clusters.values()):
        raise ConfigError(
            ("services", "gateway", "address"), f"{address} is in no cluster's load-balancer pool"
        )
    infra = next(n for n, p in pools.items() if p.role == INFRA_ROLE)
    if infra not in storage.local_cache.pools:
        raise ConfigError(
            ("storage", "local_cache", "pools"),
            f"must list {infra!r}: Prometheus, Alertmanager, Loki and Harbor keep their volumes there",
        )
    nvme_gb = hardware[pools[infra].hardware].nvme.total_gb
    monitoring, logs = services.monitoring, services.logs
    if monitoring.prometheus.volume_gb + logs.volume_gb > nvme_gb:
        raise ConfigError(
            ("services", "monitoring", "prometheus", "volume_gb"),
            f"with logs.volume_gb it exceeds the {nvme_gb} GB of NVMe of an {infra} node",
        )
    serving = services.serving
    if serving.tenant not in tenants:
        raise ConfigError(("services", "serving", "tenant"), f"unknown tenant {serving.tenant!r}")
    if len({m.name for m in serving.models}) != len(serving.models):
        raise ConfigError(("services", "serving", "models"), "model names must be unique")
    _check_bucket_protection(services, storage)
    system = pools[infra]
    for at, database in services.databases.items():
        if database.instances > system.count:
            raise ConfigError(
                (*at, "instances"),
                f"{database.instances} instances, one per node, on {system.count} {infra} nodes",
            )
    _check_model_caches(serving, tenants[serving.tenant].quota)
    _check_registry(services.registry, storage)


def _check_bucket_protection(services: Services, storage: Storage) -> None:
    """A protected bucket is one the site writes; its object lock needs versioning and ends before the
    backups it holds expire."""
    buckets = {
        services.logs.bucket,
        services.logs.ruler_bucket,
        services.registry.bucket,
        *(d.bucket for d in services.databases.values()),
        services.backups.bucket,
    }
    for name, protection in storage.aistor.bucket_protection.items():
        field = ("storage", "aistor", "bucket_protection", name)
        if name not in buckets:
            raise ConfigError(
                field, f"no consumer of the site writes bucket {name!r} ({', '.join(sorted(buckets))})"
            )
        if protection.lock_days is not None and not protection.versioning:
            raise ConfigError((*field, "versioning"), "an object lock needs versioning")
        if name == services.backups.bucket and protection.lock_days is not None:
            backups = services.backups
            kept = min(
                backups.etcd.retention_days,
                backups.velero.platform.retention_days,
                backups.velero.tenants.retention_days,
            )
            if protection.lock_days > kept:
                raise ConfigError(
                    (*field, "lock_days"),
                    f"{protection.lock_days} days outlive the shortest backup retention ({kept} days): expiry would fail",
                )
        locked = protection.lock_days
        for database in services.databases.values():
            if name == database.bucket and locked is not None and locked > database.backups.retention_days:
                raise ConfigError(
                    (*field, "lock_days"),
                    f"{protection.lock_days} days outlive the database's backup retention "
                    f"({database.backups.retention_days} days): the old backups could not go",
                )


def _check_model_caches(serving: Serving, quota: TenantQuota) -> None:
    """The serving tenant's quota holds a weight cache volume per model replica."""
    caches = sum(m.cache_gb * m.replicas for m in serving.models)
    if caches > quota.storage_gb:
        raise ConfigError(
            ("tenants", serving.tenant, "quota", "storage_gb"),
            f"{quota.storage_gb} GB cannot hold the served models' weight caches ({caches} GB)",
        )
    claims = sum(m.replicas for m in serving.models)
    if claims > quota.volumes:
        raise ConfigError(
            ("tenants", serving.tenant, "quota", "volumes"),
            f"{quota.volumes} claims cannot hold one weight cache per model replica ({claims})",
        )


def _check_registry(registry: Registry, storage: Storage) -> None:
    """One proxy cache per upstream registry, and a PowerScale class that exists."""
    upstreams: dict[str, str] = {}
    for name, cache in registry.proxy_cache.items():
        if cache.registry in upstreams:
            raise ConfigError(
                ("services", "registry", "proxy_cache", name, "url"),
                f"{cache.registry} is already cached by {upstreams[cache.registry]!r} (one containerd mirror per registry)",
            )
        upstreams[cache.registry] = name
    if registry.storage == "powerscale" and registry.powerscale_class not in storage.powerscale.classes:
        raise ConfigError(
            ("services", "registry", "powerscale_class"),
            f"unknown PowerScale class {registry.powerscale_class!r}",
        )
