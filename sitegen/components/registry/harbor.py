"""`harbor`: the site's image registry and its pull-through caches, on the hub's system pool.

Images go to an AIStor bucket (or a PowerScale volume, by config); every credential comes from the
vault; TLS ends at the site Gateway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from constructs.edge import Backend, Route
from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from constructs.registry import ADMIN_PASSWORD_KEY
from sitegen.components.base import (
    WORLD,
    ChartComponent,
    Flow,
    Layer,
    NamespaceSecurity,
    ObjectPatch,
    S3Access,
    S3Grant,
    s3_vault_key,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.registry import PROJECT
from sitegen.components.storage.aistor import CA_SECRET as AISTOR_CA_SECRET
from sitegen.components.storage.aistor import AIStor, s3_endpoint
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.values import ON, Placed, Resources, Toggle, Values, placed, requests
from sitegen.model import Site

SERVICE = "harbor"


@dataclass(frozen=True)
class VaultCopy:
    """A Secret the chart reads by name instead of generating it: keys of the Secret -> vault properties."""

    name: str
    vault_key: str
    keys: Mapping[str, str]


# Every credential Harbor uses, from the vault: the chart renders none of them (nor a random one,
# which would change on every render).
ADMIN = VaultCopy("harbor-admin", "harbor/admin", {ADMIN_PASSWORD_KEY: "password"})
SECRET_KEY = VaultCopy("harbor-secret-key", "harbor/secret-key", {"secretKey": "secretKey"})  # 16 characters
CORE = VaultCopy("harbor-core-secret", "harbor/core", {"secret": "secret"})  # 16 characters
XSRF = VaultCopy("harbor-core-xsrf", "harbor/core", {"CSRF_KEY": "csrf-key"})  # 32 characters
TOKEN = VaultCopy(
    "harbor-token", "harbor/token", {"tls.crt": "tls.crt", "tls.key": "tls.key"}
)  # token signing
JOBSERVICE = VaultCopy("harbor-jobservice-secret", "harbor/jobservice", {"JOBSERVICE_SECRET": "secret"})
REGISTRY_HTTP = VaultCopy("harbor-registry-http", "harbor/registry", {"REGISTRY_HTTP_SECRET": "http-secret"})
REGISTRY_CREDENTIALS = VaultCopy(
    "harbor-registry-credentials",
    "harbor/registry",
    {"REGISTRY_PASSWD": "password", "REGISTRY_HTPASSWD": "htpasswd"},  # htpasswd: bcrypt line of the user
)
DATABASE_PASSWORD = VaultCopy("harbor-database-password", "harbor/database", {"password": "password"})
# The internal database's own Secret: the chart's copy is left out (it would carry the password).
DATABASE = VaultCopy("harbor-database", "harbor/database", {"POSTGRES_PASSWORD": "password"})
S3_USER = "harbor"
S3 = VaultCopy(
    "harbor-s3",
    s3_vault_key(S3_USER),
    {"REGISTRY_STORAGE_S3_ACCESSKEY": "access_key", "REGISTRY_STORAGE_S3_SECRETKEY": "secret_key"},
)
CREDENTIALS = (ADMIN, SECRET_KEY, CORE, XSRF, TOKEN, JOBSERVICE, REGISTRY_HTTP, REGISTRY_CREDENTIALS)
# The nodes' pull robot (constructs/registry.py): its secret is the vault's, set by the setup Job and
# written into every host's hosts.toml by the RUNBOOK.
PULL_SECRET = "harbor-node-pull"
PULL_VAULT_KEY = "harbor/node-pull"
OIDC_SECRET = "harbor-oidc"
OIDC_VAULT_KEY = "harbor/oidc"
OVERWRITE_ENV = "CONFIG_OVERWRITE_JSON"


def oidc_settings(site: Site) -> dict[str, object]:
    """Harbor's OIDC settings (its configuration API's names): the site's provider and groups, members
    made on first login, Harbor's admins the group Argo CD makes admin; the client secret is a template
    field the ExternalSecret fills from the vault."""
    sso = site.gitops.argocd.sso
    admins = sorted(group for group, role in site.gitops.argocd.rbac.items() if role == "admin")
    return {
        "auth_mode": "oidc_auth",
        "primary_auth_mode": True,
        "oidc_name": "site",
        "oidc_endpoint": sso.issuer,
        "oidc_client_id": site.services.registry.sso_client_id,
        "oidc_client_secret": "{{ .client_secret }}",
        "oidc_scope": f"openid,profile,email,{sso.groups_claim}",
        "oidc_groups_claim": sso.groups_claim,
        "oidc_admin_group": admins[0],
        "oidc_user_claim": "preferred_username",
        "oidc_auto_onboard": True,
        "oidc_verify_cert": True,
    }


DATABASE_CREDENTIALS = (DATABASE_PASSWORD, DATABASE)


def vault_copies(registry_storage: str) -> tuple[VaultCopy, ...]:
    return (*CREDENTIALS, *DATABASE_CREDENTIALS, *((S3,) if registry_storage == "aistor" else ()))


class ClusterIP(Values):
    name: str


class ExposeTls(Values):
    enabled: bool


class Expose(Values):
    type: Literal["clusterIP"]
    tls: ExposeTls
    clusterIP: ClusterIP


class Claim(Values):
    storageClass: str
    size: str
    accessMode: Literal["ReadWriteOnce", "ReadWriteMany"] | None = None


class Claims(Values):
    database: Claim
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


class Core(Replicated):
    existingSecret: str = CORE.name
    existingXsrfSecret: str = XSRF.name
    secretName: str = TOKEN.name
    # Harbor core applies CONFIG_OVERWRITE_JSON to its settings at every start: the OIDC login, whose
    # client secret the chart's own configureUserSettings would put in git
    extraEnvVars: list[EnvVar] = [
        EnvVar(
            name=OVERWRITE_ENV,
            valueFrom=EnvSource(secretKeyRef=SecretKeyRef(name=OIDC_SECRET, key=OVERWRITE_ENV)),
        )
    ]


class JobService(Replicated):
    jobLoggers: list[Literal["file", "database", "stdout"]]
    existingSecret: str = JOBSERVICE.name


class RegistryCredentials(Values):
    existingSecret: str = REGISTRY_CREDENTIALS.name


class Registry(Replicated):
    existingSecret: str = REGISTRY_HTTP.name
    credentials: RegistryCredentials = RegistryCredentials()


class ExternalDatabase(Values):
    # read by core and the exporter for the internal database too (the chart has no other knob)
    existingSecret: str = DATABASE_PASSWORD.name


class Internal(Values):
    type: Literal["internal"]
    internal: Placed


class Database(Internal):
    external: ExternalDatabase = ExternalDatabase()


class HarborValues(Values):
    expose: Expose
    externalURL: str
    existingSecretAdminPassword: str = ADMIN.name
    existingSecretAdminPasswordKey: str = ADMIN_PASSWORD_KEY
    existingSecretSecretKey: str = SECRET_KEY.name
    persistence: Persistence
    # The site's trust anchor for S3: the registry verifies AIStor's certificate with it.
    caBundleSecretName: str | None = None
    metrics: Metrics = Metrics(enabled=True, serviceMonitor=ON)
    nginx: Replicated
    portal: Replicated
    core: Core
    jobservice: JobService
    registry: Registry
    trivy: Replicated
    exporter: Replicated
    database: Database
    redis: Internal


class Harbor(ChartComponent):
    name = "harbor"
    chart = "harbor"
    project = PROJECT
    layer = Layer.SERVICES
    after = (LocalNvme,)  # its volumes' class
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
        return [Route("harbor", self.namespace, hostname, (Backend(SERVICE, 80, timeout="0s"),))]

    def plain_secret_data(self, scope: ClusterScope) -> Mapping[str, str]:
        key = self.object_key("Secret", "harbor-trivy") + ":redisURL"
        return {key: "the internal Redis's in-cluster address, which takes no password"}

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [ObjectPatch("Secret", DATABASE.name, "written from the vault by harbor-config", drop=True)]

    def values(self, ctx: ClusterContext) -> HarborValues:
        registry = ctx.site.services.registry
        system = placed(ctx.system_placement)
        ca = registry_claim = None
        if registry.storage == "aistor":
            s3 = s3_endpoint(ctx.site, ctx.cluster)
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
        claims = Claims(
            database=Claim(storageClass=LOCAL_NVME, size="50G"),
            redis=Claim(storageClass=LOCAL_NVME, size="5G"),
            trivy=Claim(storageClass=LOCAL_NVME, size="20G"),
            registry=registry_claim,
        )
        # Stateless parts run twice; the internal database and Redis are single pods by design of the chart.
        return HarborValues(
            # TLS ends at the site Gateway; Harbor's own nginx is plain HTTP behind it
            expose=Expose(type="clusterIP", tls=ExposeTls(enabled=False), clusterIP=ClusterIP(name=SERVICE)),
            externalURL=f"https://{registry.hostname}",
            persistence=Persistence(
                enabled=True, persistentVolumeClaim=claims, imageChartStorage=image_storage
            ),
            caBundleSecretName=ca,
            nginx=Replicated(replicas=2, **system),
            portal=Replicated(replicas=2, **system),
            core=Core(replicas=2, resources=requests("500m", "1Gi", "2Gi"), **system),
            # job logs in the database: a file log would need one volume shared by both replicas
            jobservice=JobService(replicas=2, jobLoggers=["database"], **system),
            registry=Registry(replicas=2, **system),
            trivy=Replicated(replicas=1, resources=requests("200m", "512Mi", "2Gi"), **system),
            exporter=Replicated(replicas=1, **system),
            database=Database(type="internal", internal=Placed(**system)),
            redis=Internal(type="internal", internal=Placed(**system)),
        )
