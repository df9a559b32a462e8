"""`harbor`: the site's image registry and its pull-through caches, on the hub's system pool.

Images go to an AIStor bucket (or a PowerScale volume, by config); every credential comes from the
vault; the site Gateway serves its name, and with the internal CA reaches nginx over TLS too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from constructs.edge import Backend, Route
from constructs.registry import ADMIN_PASSWORD_KEY
from sitegen.components.base import (
    ChartComponent,
    Component,
    JsonPatch,
    Layer,
    NamespaceSecurity,
    ObjectPatch,
    State,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.registry import PROJECT
from sitegen.components.s3 import S3Access, S3Grant, s3_vault_key
from sitegen.components.storage.aistor import CA_SECRET as AISTOR_CA_SECRET
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.powerscale import PowerScale
from sitegen.components.values import ON, Placed, Resources, Toggle, Values, placed, requests

SERVICE = "harbor"
# Harbor's nginx serves the Gateway over TLS with the key pair the site CA issues for its Service (the
# Gateway's BackendTLSPolicy verifies it): the pull robot's credential never crosses the pod network
# in clear. Only with the internal CA, which alone can name a Service.
TLS_SECRET = "harbor-tls"
HTTP_PORT, HTTPS_PORT = 80, 443  # the chart's expose.clusterIP ports (nginx's 8080 and 8443)
# harbor-database's Cluster (harbor_database.py): its name, its primary's Service, owner and database
DATABASE_CLUSTER = "harbor-db"
DATABASE_HOST = f"{DATABASE_CLUSTER}-rw"  # the operator's Service that follows the primary
DATABASE_OWNER = "harbor"
CORE_DATABASE = "registry"
POD = "/spec/template/spec"


@dataclass(frozen=True)
class VaultCopy:
    """A Secret the chart reads by name instead of generating it: keys of the Secret -> vault properties."""

    name: str
    vault_key: str
    keys: Mapping[str, str]
    # Secret key -> the text its property (`{}`) is written into, for a credential inside a URL; a key
    # without a property is written as it stands (a setting the chart's Secret holds beside a credential).
    formats: Mapping[str, str] = field(default_factory=dict)

    def template(self) -> dict[str, str]:
        """The ExternalSecret's template: each key's text with the vault property in place."""
        out = {
            key: self.formats.get(key, "{}").format(f"{{{{ .{prop} }}}}") for key, prop in self.keys.items()
        }
        return out | {key: text for key, text in self.formats.items() if key not in self.keys}


# Every credential Harbor uses, from the vault: the chart renders none of them (nor a random one,
# which would change on every render).
ADMIN = VaultCopy("harbor-admin", "harbor/admin", {ADMIN_PASSWORD_KEY: "password"})
SECRET_KEY = VaultCopy("harbor-secret-key", "harbor/secret-key", {"secretKey": "secretKey"})
CORE = VaultCopy("harbor-core-secret", "harbor/core", {"secret": "secret"})
XSRF = VaultCopy("harbor-core-xsrf", "harbor/core", {"CSRF_KEY": "csrf-key"})
TOKEN = VaultCopy("harbor-token", "harbor/token", {"tls.crt": "tls.crt", "tls.key": "tls.key"})
JOBSERVICE = VaultCopy("harbor-jobservice-secret", "harbor/jobservice", {"JOBSERVICE_SECRET": "secret"})
REGISTRY_HTTP = VaultCopy("harbor-registry-http", "harbor/registry", {"REGISTRY_HTTP_SECRET": "http-secret"})
REGISTRY_CREDENTIALS = VaultCopy(
    "harbor-registry-credentials",
    "harbor/registry",
    {"REGISTRY_PASSWD": "password", "REGISTRY_HTPASSWD": "htpasswd"},
)
DATABASE_PASSWORD = VaultCopy("harbor-database-password", "harbor/database", {"password": "password"})
S3_USER = "harbor"
S3 = VaultCopy(
    "harbor-s3",
    s3_vault_key(S3_USER),
    {"REGISTRY_STORAGE_S3_ACCESSKEY": "access_key", "REGISTRY_STORAGE_S3_SECRETKEY": "secret_key"},
)

# The internal Redis (the chart's has no password): one vault password, which the server requires and
# each client's URL carries. Clients read their URLs from these Secrets, so the password must be safe
# in a URL's userinfo as it stands (hex, VAULT_FORMATS).
REDIS_SERVICE = "harbor-redis"
REDIS_VAULT_KEY = "harbor/redis"
# The server reads the password as a file (redis.conf's own `requirepass`), never from its environment
REDIS_AUTH_FILE = "auth.conf"
REDIS_AUTH_DIR = "/etc/redis-auth"


@dataclass(frozen=True)
class RedisClient:
    """One Redis URL of Harbor's: the environment variable its component reads it from, its database."""

    env: str
    database: int
    idle_timeout: bool = True  # the chart's URLs for core, registry and trivy close idle connections

    def url_format(self) -> str:
        query = "?idle_timeout_seconds=30" if self.idle_timeout else ""
        return f"redis://:{{}}@{REDIS_SERVICE}:6379/{self.database}{query}"


# The chart's database indexes (its internal Redis's values, set below), one place
JOBSERVICE_DB, REGISTRY_DB, TRIVY_DB = 1, 2, 5
CORE_URLS = (RedisClient("_REDIS_URL_CORE", 0), RedisClient("_REDIS_URL_REG", REGISTRY_DB))
# Harbor's jobservice takes this over its config file's redis_url (src/jobservice/config/config.go)
JOBSERVICE_URL = RedisClient("JOB_SERVICE_POOL_REDIS_URL", JOBSERVICE_DB, idle_timeout=False)
# the exporter reads HARBOR_-prefixed settings from the environment (viper)
EXPORTER_URL = RedisClient("HARBOR_REDIS_URL", JOBSERVICE_DB, idle_timeout=False)
REDIS_URLS = (*CORE_URLS, JOBSERVICE_URL, EXPORTER_URL)
REDIS = VaultCopy(
    "harbor-redis",
    REDIS_VAULT_KEY,
    {REDIS_AUTH_FILE: "password"} | {client.env: "password" for client in REDIS_URLS},
    {REDIS_AUTH_FILE: "requirepass {}\n"} | {client.env: client.url_format() for client in REDIS_URLS},
)
# The chart's own Secrets for the registry and the scanner carry the password empty or inside a URL
# without one: these replace them, under their names.
REGISTRY_REDIS = VaultCopy("harbor-registry", REDIS_VAULT_KEY, {"REGISTRY_REDIS_PASSWORD": "password"})
TRIVY_REDIS = VaultCopy(
    "harbor-trivy",
    REDIS_VAULT_KEY,
    {"redisURL": "password"},
    {"redisURL": RedisClient("redisURL", TRIVY_DB).url_format(), "gitHubToken": ""},
)
# The chart's workloads that read the password (the server first), restarted when it changes
REDIS_READERS = (
    f"statefulset/{REDIS_SERVICE}", "statefulset/harbor-trivy", "deployment/harbor-core",
    "deployment/harbor-jobservice", "deployment/harbor-exporter", "deployment/harbor-registry",
)  # fmt: skip
# What Harbor's software asks of its keys' values (the chart's notes; the registry user is its default)
VAULT_FORMATS = {
    SECRET_KEY.vault_key: "secretKey: 16 characters, Harbor's encryption key",
    CORE.vault_key: "secret: 16 characters; csrf-key: 32 characters",
    JOBSERVICE.vault_key: "secret: 16 characters",
    REGISTRY_HTTP.vault_key: "http-secret: 16 characters; htpasswd: the bcrypt htpasswd line of "
    "`harbor_registry_user` with `password`",
    TOKEN.vault_key: "Harbor signs its tokens with them",
    REDIS_VAULT_KEY: "password: hex (`openssl rand -hex 32`), as Harbor's clients carry it inside Redis URLs; "
    "each reads it at start, so a new one (an hour for the Secrets to follow) takes `kubectl -n harbor "
    f"rollout restart {' '.join(REDIS_READERS)}`",
}
CREDENTIALS = (
    ADMIN, SECRET_KEY, CORE, XSRF, TOKEN, JOBSERVICE, REGISTRY_HTTP, REGISTRY_CREDENTIALS,
    REDIS, REGISTRY_REDIS, TRIVY_REDIS,
)  # fmt: skip
DATABASE_CREDENTIALS = (DATABASE_PASSWORD,)
# Secrets the chart renders that the vault's copies replace
CHART_SECRETS = (REGISTRY_REDIS, TRIVY_REDIS)
# The nodes' pull robot (constructs/registry.py): its secret is the vault's (HarborConfig.pull_vault_key).
PULL_SECRET = "harbor-node-pull"
OIDC_SECRET = "harbor-oidc"
OIDC_VAULT_KEY = "harbor/oidc"
OVERWRITE_ENV = "CONFIG_OVERWRITE_JSON"


def vault_copies(registry_storage: str) -> tuple[VaultCopy, ...]:
    return (*CREDENTIALS, *DATABASE_CREDENTIALS, *((S3,) if registry_storage == "aistor" else ()))


class ClusterIP(Values):
    name: str


class TlsSecret(Values):
    secretName: str


class ExposeTls(Values):
    enabled: bool
    certSource: Literal["secret"] | None = None
    secret: TlsSecret | None = None


class Expose(Values):
    type: Literal["clusterIP"]
    tls: ExposeTls
    clusterIP: ClusterIP


class Claim(Values):
    storageClass: str
    size: str
    accessMode: Literal["ReadWriteOnce", "ReadWriteMany"] | None = None


class Claims(Values):
    redis: Claim
    trivy: Claim
    registry: Claim | None = None


class S3Storage(Values):
    region: str
    bucket: str
    regionendpoint: str
    existingSecret: str
    secure: bool
    v4auth: bool


class ImageChartStorage(Values):
    type: Literal["s3", "filesystem"]
    # S3-compatible stores cannot serve the registry's redirects to signed URLs to every client
    disableredirect: bool | None = None
    s3: S3Storage | None = None


class Persistence(Values):
    enabled: bool
    persistentVolumeClaim: Claims
    imageChartStorage: ImageChartStorage


class Metrics(Values):
    enabled: bool
    serviceMonitor: Toggle


class Replicated(Placed):
    replicas: int
    resources: Resources | None = None


class SecretKeyRef(Values):
    name: str
    key: str


class EnvSource(Values):
    secretKeyRef: SecretKeyRef


class EnvVar(Values):
    name: str
    valueFrom: EnvSource


def secret_env(name: str, secret: str) -> EnvVar:
    return EnvVar(name=name, valueFrom=EnvSource(secretKeyRef=SecretKeyRef(name=secret, key=name)))


def redis_env(*clients: RedisClient) -> list[EnvVar]:
    """The Redis URLs with the password; a container's own env wins over its chart ConfigMap's."""
    return [secret_env(client.env, REDIS.name) for client in clients]


class Core(Replicated):
    existingSecret: str = CORE.name
    existingXsrfSecret: str = XSRF.name
    secretName: str = TOKEN.name
    # Harbor core applies CONFIG_OVERWRITE_JSON to its settings at every start: the OIDC login, whose
    # client secret the chart's own configureUserSettings would put in git
    extraEnvVars: list[EnvVar] = [secret_env(OVERWRITE_ENV, OIDC_SECRET), *redis_env(*CORE_URLS)]


class JobService(Replicated):
    jobLoggers: list[Literal["file", "database", "stdout"]]
    existingSecret: str = JOBSERVICE.name
    extraEnvVars: list[EnvVar] = redis_env(JOBSERVICE_URL)


class Exporter(Replicated):
    extraEnvVars: list[EnvVar] = redis_env(EXPORTER_URL)


class RegistryCredentials(Values):
    existingSecret: str = REGISTRY_CREDENTIALS.name


class Registry(Replicated):
    existingSecret: str = REGISTRY_HTTP.name
    credentials: RegistryCredentials = RegistryCredentials()


class ExternalDatabase(Values):
    host: str
    port: str = "5432"
    username: str
    coreDatabase: str
    existingSecret: str = DATABASE_PASSWORD.name  # its key `password`, from the vault
    # encrypted; the instances' certificates are the operator's own CA's, which Harbor does not trust
    sslmode: Literal["require"] = "require"


class Database(Values):
    type: Literal["external"] = "external"  # harbor-database: replicated, its WAL archived
    external: ExternalDatabase
    # per pod of core and the exporter: together below the database's max_connections
    maxIdleConns: int = 20
    maxOpenConns: int = 100


class RedisServer(Placed):
    jobserviceDatabaseIndex: str = str(JOBSERVICE_DB)
    registryDatabaseIndex: str = str(REGISTRY_DB)
    trivyAdapterIndex: str = str(TRIVY_DB)


class Redis(Values):
    type: Literal["internal"]
    internal: RedisServer


class HarborValues(Values):
    expose: Expose
    externalURL: str
    existingSecretAdminPassword: str = ADMIN.name
    existingSecretAdminPasswordKey: str = ADMIN_PASSWORD_KEY
    existingSecretSecretKey: str = SECRET_KEY.name
    persistence: Persistence
    # The site's trust anchor for S3: the registry verifies AIStor's certificate with it.
    caBundleSecretName: str | None = None
    # with nginx's TLS the chart mounts this Secret's `ca.crt` in core (the portal's CA download); one
    # is needed, or the volume has no source at all
    caSecretName: str | None = None
    metrics: Metrics = Metrics(enabled=True, serviceMonitor=ON)
    nginx: Replicated
    portal: Replicated
    core: Core
    jobservice: JobService
    registry: Registry
    trivy: Replicated
    exporter: Exporter
    database: Database
    redis: Redis


class Harbor(ChartComponent):
    name = "harbor"
    chart = "harbor"
    project = PROJECT
    layer = Layer.SERVICES
    after = ()  # its database is harbor-database (before it); no volume of its own on a node

    def dependencies(self, ctx: ClusterContext) -> tuple[type[Component], ...]:
        # with its images on a PowerScale class, its claims need the class
        return (PowerScale,) if self.persistent(ctx) else ()

    namespace = "harbor"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(AIStor, (), "image layers in AIStor (S3)"),
            Flow(WORLD, (443,), "the upstream registries its proxy caches pull from, the OIDC provider"),
        ]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        registry = ctx.site.services.registry
        return [S3Access(S3_USER, (S3Grant(registry.bucket),))] if registry.storage == "aistor" else []

    def routes(self, ctx: ClusterContext) -> list[Route]:
        # image layers take longer than any fixed request timeout
        hostname = ctx.site.services.registry.hostname
        if ctx.site.services.certificates.internal_ca:
            backend = Backend(SERVICE, HTTPS_PORT, timeout="0s", tls_secret=TLS_SECRET)
        else:
            backend = Backend(SERVICE, HTTP_PORT, timeout="0s")
        return [Route("harbor", self.namespace, hostname, (backend,))]

    def vault_formats(self, scope: ClusterScope) -> Mapping[str, str]:
        return VAULT_FORMATS

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        from_vault = "written from the vault by harbor-config"
        passwordless = "the chart's Redis URLs carry no password: the containers read them from the vault"
        persistent = self.persistent(ctx)
        auth = {"name": "auth", "secret": {"secretName": REDIS.name, "defaultMode": 0o440,
                                           "items": [{"key": REDIS_AUTH_FILE, "path": REDIS_AUTH_FILE}]}}  # fmt: skip
        return [
            *(ObjectPatch("Secret", copy.name, from_vault, drop=True) for copy in CHART_SECRETS),
            ObjectPatch(
                "ConfigMap", "harbor-core", passwordless,
                tuple(JsonPatch("remove", f"/data/{client.env}") for client in CORE_URLS),
            ),
            ObjectPatch(
                "ConfigMap", "harbor-exporter-env", passwordless, (JsonPatch("remove", f"/data/{EXPORTER_URL.env}"),)
            ),
            ObjectPatch(
                "StatefulSet", REDIS_SERVICE, "the chart starts Redis without a password",
                (
                    JsonPatch("test", f"{POD}/containers/0/name", "redis"),
                    # the chart mounts nothing but its data: a claim, or with no persistence an emptyDir
                    JsonPatch("test", f"{POD}/volumes", None if persistent else [{"name": "data", "emptyDir": {}}]),
                    # the image's own CMD, then the password's file on top of its configuration
                    JsonPatch(
                        "add", f"{POD}/containers/0/command",
                        ["redis-server", "/etc/redis.conf", "--include", f"{REDIS_AUTH_DIR}/{REDIS_AUTH_FILE}"],
                    ),
                    JsonPatch(
                        "add", f"{POD}/containers/0/volumeMounts/-",
                        {"name": "auth", "mountPath": REDIS_AUTH_DIR, "readOnly": True},
                    ),
                    # the pod's fsGroup (the redis user's) reads it, nobody else
                    JsonPatch("add", f"{POD}/volumes", [auth]) if persistent else JsonPatch("add", f"{POD}/volumes/-", auth),
                ),
            ),
        ]  # fmt: skip

    @staticmethod
    def persistent(ctx: ClusterContext) -> bool:
        """Whether the chart's volumes are claims: only with the images on a PowerScale class."""
        return ctx.site.services.registry.storage != "aistor"

    def state(self, ctx: ClusterContext) -> list[State]:
        if not self.persistent(ctx):
            return []  # its caches in emptyDir, its images in AIStor, its database harbor-database's
        images = "its images, on PowerScale: the array's snapshots and replication, outside this model"
        return [
            State("harbor-registry", "the image layers and manifests", "state", without_copy=images),
            State("harbor-redis", "the job service's queue, sessions, the registry's layer cache", "cache",
                  without_copy="refilled as images are pulled; queued jobs (scans, garbage "
                  "collection) run again on their schedules"),
            State("harbor-trivy", "Trivy's vulnerability database", "cache",
                  without_copy="downloaded again by the scanner on its next update"),
        ]  # fmt: skip

    def values(self, ctx: ClusterContext) -> HarborValues:
        registry = ctx.site.services.registry
        system = placed(ctx.system_placement)
        ca = registry_claim = None
        if registry.storage == "aistor":
            s3 = AIStor.s3_endpoint(ctx.site, ctx.cluster)
            image_storage = ImageChartStorage(
                type="s3",
                disableredirect=True,
                s3=S3Storage(
                    region=s3.region,
                    bucket=registry.bucket,
                    regionendpoint=s3.url,
                    existingSecret=S3.name,
                    secure=True,
                    v4auth=True,
                ),
            )
            ca = AISTOR_CA_SECRET
        else:
            image_storage = ImageChartStorage(type="filesystem")
            registry_claim = Claim(
                storageClass=registry.powerscale_class,
                accessMode="ReadWriteMany",  # NFS: every registry replica mounts it
                size=f"{registry.volume_gb}G",
            )
        # Redis (the job queue, sessions, the layer cache) and Trivy's database are caches: with the
        # images in AIStor nothing of Harbor but its database needs a volume, and a node lost strands
        # none (emptyDir); on PowerScale they share its class, which no node holds
        caches = None if registry_claim is None else registry.powerscale_class
        claims = Claims(
            redis=Claim(storageClass=caches or "", size="5G"),
            trivy=Claim(storageClass=caches or "", size="20G"),
            registry=registry_claim,
        )
        # Stateless parts run twice; Redis (a cache and job queue) is a single pod by design of the chart,
        # the database is harbor-database's.
        return HarborValues(
            expose=Expose(type="clusterIP", tls=_nginx_tls(ctx), clusterIP=ClusterIP(name=SERVICE)),
            externalURL=f"https://{registry.hostname}",
            persistence=Persistence(
                enabled=registry_claim is not None,
                persistentVolumeClaim=claims,
                imageChartStorage=image_storage,
            ),
            caBundleSecretName=ca,
            caSecretName=TLS_SECRET if ctx.site.services.certificates.internal_ca else None,
            nginx=Replicated(replicas=2, **system),
            portal=Replicated(replicas=2, **system),
            core=Core(replicas=2, resources=requests("500m", "1Gi", "2Gi"), **system),
            # job logs in the database: a file log would need one volume shared by both replicas
            jobservice=JobService(replicas=2, jobLoggers=["database"], **system),
            registry=Registry(replicas=2, **system),
            trivy=Replicated(replicas=1, resources=requests("200m", "512Mi", "2Gi"), **system),
            exporter=Exporter(replicas=1, **system),
            database=Database(
                external=ExternalDatabase(
                    host=DATABASE_HOST, username=DATABASE_OWNER, coreDatabase=CORE_DATABASE
                )
            ),
            redis=Redis(type="internal", internal=RedisServer(**system)),
        )


def _nginx_tls(ctx: ClusterContext) -> ExposeTls:
    """With the internal CA, nginx serves the Gateway the certificate issued for its Service (TLS_SECRET);
    else TLS ends at the Gateway and nginx is plain HTTP behind it."""
    if not ctx.site.services.certificates.internal_ca:
        return ExposeTls(enabled=False)
    return ExposeTls(enabled=True, certSource="secret", secret=TlsSecret(secretName=TLS_SECRET))
