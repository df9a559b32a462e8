"""`grafana`: dashboards on the hub, with Prometheus and Loki as data sources and the repo's dashboards."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from constructs.edge import Backend, Route
from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.components.base import ChartComponent, Flow, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.observability import PROJECT
from sitegen.components.observability.kube_prometheus_stack import (
    PROMETHEUS_PORT,
    PROMETHEUS_SERVICE,
    KubePrometheusStack,
)
from sitegen.components.observability.loki import GATEWAY_SERVICE as LOKI_GATEWAY
from sitegen.components.observability.loki import LOKI_CLIENT, Loki
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.values import OFF, ON, Placed, Resources, Toggle, Values, placed, requests

SERVICE = "grafana"
ADMIN_SECRET = "grafana-admin"
ADMIN_VAULT_KEY = "grafana/admin"
DASHBOARD_LABEL = ("grafana_dashboard", "1")
SERVICE_ACCOUNT = "grafana"  # the chart's, from its release name
FOLDER_ANNOTATION = "grafana_folder"


class Persistence(Values):
    enabled: bool
    type: Literal["pvc"]
    storageClassName: str
    size: str


class Admin(Values):
    existingSecret: str
    userKey: str
    passwordKey: str


class ServerIni(Values):
    root_url: str


class AnalyticsIni(Values):
    check_for_updates: bool
    reporting_enabled: bool


class GrafanaIni(Values):
    server: ServerIni
    analytics: AnalyticsIni
    auth_anonymous: Toggle = Field(alias="auth.anonymous")


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


class DashboardSidecar(Values):
    enabled: bool
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
    # one replica: a second needs a shared SQL database, which the site does not run (state is in a
    # local volume and everything that matters is provisioned from the repo)
    replicas: int = 1
    resources: Resources
    persistence: Persistence
    admin: Admin = Admin(existingSecret=ADMIN_SECRET, userKey="admin-user", passwordKey="admin-password")
    envFromSecret: str = LOKI_CLIENT  # provisioning expands ${LOKI_*} in the Loki datasource
    grafana_ini: GrafanaIni = Field(alias="grafana.ini")
    datasources: Datasources
    sidecar: Sidecar
    serviceMonitor: Toggle = ON
    # a Role in its own namespace, not a ClusterRole reading every Secret of the cluster; the stack's
    # dashboards are read through a Role in theirs (see observability.py)
    rbac: Rbac = Rbac(namespaced=True)
    testFramework: Toggle = OFF  # a helm-test pod Argo CD would never run


class Grafana(ChartComponent):
    name = "grafana"
    chart = "grafana"
    project = PROJECT
    layer = Layer.SERVICES
    after = (
        KubePrometheusStack,
        Loki,
        LocalNvme,
    )  # data sources; its volume; its admin and dashboards
    namespace = "grafana"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(KubePrometheusStack, (), "the Prometheus datasource"),
            Flow(Loki, (), "the Loki datasource"),
        ]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def routes(self, ctx: ClusterContext) -> list[Route]:
        hostname = ctx.site.services.monitoring.grafana_hostname
        return [Route("grafana", self.namespace, hostname, (Backend(SERVICE, 80),))]

    def values(self, ctx: ClusterContext) -> GrafanaValues:
        monitoring = ctx.site.services.monitoring
        prometheus = ctx.get(KubePrometheusStack).namespace
        return GrafanaValues(
            resources=requests("200m", "512Mi", "2Gi"),
            persistence=Persistence(enabled=True, type="pvc", storageClassName=LOCAL_NVME, size="20G"),
            grafana_ini=GrafanaIni(
                server=ServerIni(root_url=f"https://{monitoring.grafana_hostname}/"),
                analytics=AnalyticsIni(check_for_updates=False, reporting_enabled=False),
                auth_anonymous=OFF,
            ),
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
                    provider=DashboardProvider(foldersFromFilesStructure=True),
                )
            ),
            **placed(ctx.system_placement),
        )
