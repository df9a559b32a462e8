"""`grafana`: dashboards on the hub, with Prometheus and Loki as data sources and the repo's dashboards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from constructs.edge import Backend, Route
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, VaultSecretSpec
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.observability import PROJECT
from sitegen.components.observability.kube_prometheus_stack import (
    PROMETHEUS_PORT,
    PROMETHEUS_SERVICE,
    KubePrometheusStack,
)
from sitegen.components.observability.loki import GATEWAY_SERVICE as LOKI_GATEWAY
from sitegen.components.observability.loki import LOKI_CLIENT, Loki, client_secret
from sitegen.components.values import OFF, Placed, Resources, Toggle, Values, placed, requests

SERVICE = "grafana"
TLS_SECRET = "grafana-tls"  # issued by the site CA for the Service (the Gateway's BackendTLSPolicy)
TLS_MOUNT = "/etc/grafana/tls"
CERTS_WATCH_INTERVAL = "10m"  # a renewal leaves the old pair valid for a month
ADMIN_SECRET = "grafana-admin"
ADMIN_VAULT_KEY = "grafana/admin"
OIDC_SECRET = "grafana-oidc"
OIDC_SECRET_KEY = "clientSecret"
OIDC_VAULT_KEY = "grafana/oidc"
OIDC_ENV = "GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"  # Grafana reads any ini key from GF_<SECTION>_<KEY>
DASHBOARD_LABEL = ("grafana_dashboard", "1")
SERVICE_ACCOUNT = "grafana"  # the chart's, from its release name
FOLDER_ANNOTATION = "grafana_folder"
# grafana-database's Cluster (grafana_database.py): its name, owner and database; its owner's Secret
DATABASE_CLUSTER = "grafana-db"
DATABASE_OWNER = "grafana"
DATABASE_NAME = "grafana"
DATABASE_VAULT_KEY = "grafana/database"
DATABASE_PASSWORD_ENV = "GF_DATABASE_PASSWORD"


class Persistence(Values):
    enabled: bool


class Admin(Values):
    existingSecret: str
    userKey: str
    passwordKey: str


class ServerIni(Values):
    root_url: str
    protocol: Literal["http", "https"] = "http"
    cert_file: str | None = None
    cert_key: str | None = None
    # how often Grafana compares the files' mtime and reloads a renewed pair (0, its default: never)
    certs_watch_interval: str | None = None


class AnalyticsIni(Values):
    check_for_updates: bool
    reporting_enabled: bool


class AuthIni(Values):
    # the site's OIDC provider is the way in; the local admin is break-glass (RUNBOOK), not a login form
    disable_login_form: bool = True


class GenericOauthIni(Values):
    enabled: bool = True
    name: str = "SSO"
    client_id: str
    scopes: str = "openid profile email groups"
    auth_url: str
    token_url: str
    api_url: str
    use_pkce: bool = True
    allow_sign_up: bool = True  # a user is created at their first login, with the role their groups give
    role_attribute_path: str
    role_attribute_strict: bool = True  # no matching group: no login (as Argo CD: nobody else gets access)
    groups_attribute_path: str


class DatabaseIni(Values):
    """Its users, preferences, service accounts and UI-made dashboards in grafana-database's primary;
    the password from the environment."""

    type: Literal["postgres"] = "postgres"
    host: str
    name: str = DATABASE_NAME
    user: str = DATABASE_OWNER
    ssl_mode: Literal["require"] = "require"
    max_open_conn: int = 20  # per replica: the two together below the Cluster's max_connections


class GrafanaIni(Values):
    server: ServerIni
    database: DatabaseIni
    analytics: AnalyticsIni
    auth_anonymous: Toggle = Field(alias="auth.anonymous")
    auth: AuthIni = AuthIni()
    auth_basic: Toggle = Field(default=OFF, alias="auth.basic")  # no password on the API either
    auth_generic_oauth: GenericOauthIni = Field(alias="auth.generic_oauth")


class SecretKeyRef(Values):
    name: str
    key: str


class EnvSecret(Values):
    secretKeyRef: SecretKeyRef


class Datasource(Values):
    name: str
    type: Literal["prometheus", "loki"]
    uid: str
    url: str
    access: Literal["proxy"] = "proxy"
    isDefault: bool | None = None
    basicAuth: bool | None = None
    basicAuthUser: str | None = None
    secureJsonData: dict[str, str] | None = None


class DatasourcesFile(Values):
    apiVersion: int = 1
    datasources: list[Datasource]


class Datasources(Values):
    datasources_yaml: DatasourcesFile = Field(alias="datasources.yaml")


class DashboardProvider(Values):
    foldersFromFilesStructure: bool


class HttpGet(Values):
    path: str = "/api/health"
    port: str = "grafana"
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"


class Probe(Values):
    httpGet: HttpGet = HttpGet()
    initialDelaySeconds: int | None = None
    timeoutSeconds: int | None = None
    failureThreshold: int | None = None


class CaSecret(Values):
    name: str
    key: str = "ca.crt"


class CaRef(Values):
    secret: CaSecret


class ScrapeTls(Values):
    ca: CaRef
    serverName: str


class ServiceMonitor(Values):
    enabled: bool = True
    scheme: Literal["http", "https"] = "http"
    tlsConfig: ScrapeTls | None = None


class SecretMount(Values):
    name: str
    mountPath: str
    secretName: str
    readOnly: bool = True
    defaultMode: int = 0o440  # the key pair: readable by Grafana's group (fsGroup) only


class DashboardSidecar(Values):
    enabled: bool
    # Grafana's file provider rescans the folder itself: the sidecar need not call its reload API
    # (over HTTPS to localhost, a name its certificate does not carry)
    skipReload: bool = False
    label: str
    labelValue: str
    searchNamespace: list[str]
    resource: Literal["configmap", "secret", "both"] = "configmap"  # dashboards are no secrets
    folderAnnotation: str
    provider: DashboardProvider


class Rbac(Values):
    namespaced: bool


class Sidecar(Values):
    dashboards: DashboardSidecar


class GrafanaValues(Placed):
    # two replicas on one database (grafana-database): sessions and what users make in the UI are
    # there, not in a pod's volume
    replicas: int = 2
    resources: Resources
    persistence: Persistence = Persistence(enabled=False)
    admin: Admin = Admin(existingSecret=ADMIN_SECRET, userKey="admin-user", passwordKey="admin-password")
    envFromSecret: str = LOKI_CLIENT  # provisioning expands ${LOKI_*} in the Loki datasource
    envValueFrom: dict[str, EnvSecret]  # the OIDC client secret, from the vault
    grafana_ini: GrafanaIni = Field(alias="grafana.ini")
    datasources: Datasources
    sidecar: Sidecar
    serviceMonitor: ServiceMonitor = ServiceMonitor()
    readinessProbe: Probe = Probe()
    livenessProbe: Probe = Probe(initialDelaySeconds=60, timeoutSeconds=30, failureThreshold=10)
    extraSecretMounts: list[SecretMount] = []
    # a Role in its own namespace, not a ClusterRole reading every Secret of the cluster; the stack's
    # dashboards are read through a Role in theirs (see observability.py)
    rbac: Rbac = Rbac(namespaced=True)
    testFramework: Toggle = OFF  # a helm-test pod Argo CD would never run
    # no root init container chowning a data volume: there is none
    initChownData: Toggle = OFF


class Grafana(ChartComponent):
    name = "grafana"
    chart = "grafana"
    project = PROJECT
    layer = Layer.SERVICES
    after = (KubePrometheusStack, Loki)  # its data sources
    namespace = "grafana"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    def reloads_certificates(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            self.object_key(
                "Deployment", "grafana"
            ): f"server.certs_watch_interval ({CERTS_WATCH_INTERVAL}): it "
            "compares the pair's mtime and loads a changed one (grafana pkg/api/http_server.go WatchAndUpdateCerts)"
        }

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """Its admin, its OIDC client's secret, and its pair for Loki's gateway."""
        return [
            VaultSecretSpec(ADMIN_SECRET, self.namespace, ADMIN_VAULT_KEY, ("admin-user", "admin-password")),
            VaultSecretSpec(OIDC_SECRET, self.namespace, OIDC_VAULT_KEY, (OIDC_SECRET_KEY,)),
            client_secret(self.namespace),
        ]

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(KubePrometheusStack, (), "the Prometheus datasource"),
            Flow(Loki, (), "the Loki datasource"),
            Flow(WORLD, (443,), "the OIDC provider's token and userinfo endpoints"),
        ]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def routes(self, ctx: ClusterContext) -> list[Route]:
        hostname = ctx.site.services.monitoring.grafana_hostname
        tls = TLS_SECRET if ctx.site.services.certificates.internal_ca else None
        return [Route("grafana", self.namespace, hostname, (Backend(SERVICE, 80, tls_secret=tls),))]

    def _https(self, ctx: ClusterContext) -> dict[str, Any]:
        """With the internal CA: Grafana serves the certificate the Gateway has issued for its Service
        (and verifies); its probes and Prometheus' scrape follow it to HTTPS."""
        if not ctx.site.services.certificates.internal_ca:
            return {}
        https = Probe(httpGet=HttpGet(scheme="HTTPS"))
        return {
            "readinessProbe": https,
            "livenessProbe": https.model_copy(
                update={"initialDelaySeconds": 60, "timeoutSeconds": 30, "failureThreshold": 10}
            ),
            "extraSecretMounts": [SecretMount(name="tls", mountPath=TLS_MOUNT, secretName=TLS_SECRET)],
            "serviceMonitor": ServiceMonitor(
                scheme="https",
                tlsConfig=ScrapeTls(
                    ca=CaRef(secret=CaSecret(name=TLS_SECRET)), serverName=f"{SERVICE}.{self.namespace}.svc"
                ),
            ),
        }

    @staticmethod
    def _oauth(ctx: ClusterContext) -> GenericOauthIni:
        """Argo CD's groups give the roles (admin: Admin, readonly: Viewer); the JMESPath yields null
        for anyone else, which role_attribute_strict refuses."""
        sso = ctx.site.services.monitoring.grafana_sso
        gitops = ctx.site.gitops.argocd
        role = {"admin": "Admin", "readonly": "Viewer"}
        claim = gitops.sso.groups_claim
        path = " || ".join(
            f"contains({claim}[*], '{group}') && '{role[level]}'"
            for level in ("admin", "readonly")
            for group, granted in sorted(gitops.rbac.items())
            if granted == level
        )
        return GenericOauthIni(
            client_id=sso.client_id,
            auth_url=sso.auth_url,
            token_url=sso.token_url,
            api_url=sso.api_url,
            role_attribute_path=path,
            groups_attribute_path=claim,
        )

    def values(self, ctx: ClusterContext) -> GrafanaValues:
        monitoring = ctx.site.services.monitoring
        prometheus = ctx.get(KubePrometheusStack).namespace
        https = self._https(ctx)
        server = ServerIni(root_url=f"https://{monitoring.grafana_hostname}/")
        if https:
            server = server.model_copy(
                update={
                    "protocol": "https",
                    "cert_file": f"{TLS_MOUNT}/tls.crt",
                    "cert_key": f"{TLS_MOUNT}/tls.key",
                    "certs_watch_interval": CERTS_WATCH_INTERVAL,
                }
            )
        return GrafanaValues(
            **https,
            resources=requests("200m", "512Mi", "2Gi"),
            grafana_ini=GrafanaIni(
                server=server,
                database=DatabaseIni(host=f"{DATABASE_CLUSTER}-rw:5432"),
                analytics=AnalyticsIni(check_for_updates=False, reporting_enabled=False),
                auth_anonymous=OFF,
                auth_generic_oauth=self._oauth(ctx),
            ),
            envValueFrom={
                OIDC_ENV: EnvSecret(secretKeyRef=SecretKeyRef(name=OIDC_SECRET, key=OIDC_SECRET_KEY)),
                DATABASE_PASSWORD_ENV: EnvSecret(
                    secretKeyRef=SecretKeyRef(name=f"{DATABASE_CLUSTER}-app", key="password")
                ),
            },
            datasources=Datasources(
                datasources_yaml=DatasourcesFile(
                    datasources=[
                        Datasource(
                            name="Prometheus",
                            type="prometheus",
                            uid="prometheus",
                            url=ctx.service_url(PROMETHEUS_SERVICE, prometheus, PROMETHEUS_PORT),
                            isDefault=True,
                        ),
                        Datasource(
                            name="Loki",
                            type="loki",
                            uid="loki",
                            url=ctx.service_url(LOKI_GATEWAY, ctx.get(Loki).namespace),
                            basicAuth=True,
                            basicAuthUser="${LOKI_USERNAME}",
                            secureJsonData={"basicAuthPassword": "${LOKI_PASSWORD}"},
                        ),
                    ]
                )
            ),
            sidecar=Sidecar(
                # the site's dashboards (repo) and the chart dashboards of kube-prometheus-stack
                dashboards=DashboardSidecar(
                    enabled=True,
                    label=DASHBOARD_LABEL[0],
                    labelValue=DASHBOARD_LABEL[1],
                    searchNamespace=sorted({self.namespace, ctx.get(KubePrometheusStack).namespace}),
                    folderAnnotation=FOLDER_ANNOTATION,
                    skipReload=bool(https),
                    provider=DashboardProvider(foldersFromFilesStructure=True),
                )
            ),
            **placed(ctx.system_placement),
        )
