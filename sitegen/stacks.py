"""Compose each variant: one chart per Argo CD Application, Helm values, host files and the bootstrap.

Each AppChart is exactly one Argo CD Application (one folder of dist/); HostFilesChart holds the
files a human places on hosts (kubeadm/); BootstrapChart holds what the root Application syncs. No
chart depends on another, so nothing here relies on cdk8s's own file naming.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

from cdk8s import App, Chart

from constructs import Construct
from constructs.aistor import ObjectStore, license_secret
from constructs.argocd import (
    AppProject,
    AppSet,
    ClusterRegistration,
    Destination,
    GroupKind,
    LockedDefaultProject,
    RepositoryCredentials,
    RootApplication,
)
from constructs.cilium import LoadBalancerPool
from constructs.edge import Backend, CoreDnsPlacement, Route, SiteGateway, SiteIssuer
from constructs.fabric import FabricImages, RailFabric
from constructs.gpu_workload import NcclAllReduceJob
from constructs.host_file import HostFile
from constructs.kube_vip import KubeVipStaticPod
from constructs.kubeadm import KubeadmConfigs
from constructs.kueue import GpuQueues, TenantQueue
from constructs.local_cache import LocalNvmeClass
from constructs.monitoring import CILIUM_TARGETS, Dashboards, FabricPool, PodMonitors, SiteAlerts, SiteRisks
from constructs.namespaces import AppNamespace
from constructs.node_pool import NodePool
from constructs.powerscale import PowerScaleAccess, PowerScaleClasses, PowerScaleSnapshots
from constructs.registry import HarborSecrets, ProxyCacheProjects
from constructs.secrets import SecretStore, VaultSecret
from constructs.serving import ServingModels
from sitegen.apps import BOOTSTRAP_PROJECT, PROJECTS, AppSpec, cluster_apps
from sitegen.dist import OutputFile
from sitegen.erasure import aistor_layout
from sitegen.layout import ClusterLayout, PoolLayout, VariantLayout, resolve
from sitegen.mirrors import mirror_files
from sitegen.model import Site
from sitegen.runbook import runbook
from sitegen.values import chart_values
from sitegen.values.argocd import ARGOCD_FULLNAME
from sitegen.values.gpu_operator import RUNTIME_CLASS
from sitegen.values.observability import (
    AISTOR_CA_SECRET,
    GRAFANA_ADMIN_SECRET,
    GRAFANA_SERVICE,
    LOKI_S3_SECRET,
    OTEL_GATEWAY,
    OTLP_HTTP_PORT,
    PROMETHEUS_SERVICE,
    REMOTE_WRITE_SECRET,
    SITE_CA_KEY,
    SITE_CA_SECRET,
    TELEMETRY_USERS,
    trusts_site_ca,
)
from sitegen.values.platform import HARBOR_S3_SECRET, HARBOR_SERVICE, ROUTER_PORT, ROUTER_SERVICE

REPO_DIST = PurePosixPath("dist")  # where dist/ sits in the GitOps repository Argo CD reads


class AppChart(Chart):
    """One Argo CD Application: `dist/<variant>/apps/<cluster>/<app>/`, one file per object."""

    def __init__(self, scope: Construct, *, layout: VariantLayout, cluster: str, app: str) -> None:
        super().__init__(scope, f"{layout.name}-{cluster}-{app}", disable_resource_name_hashes=True)
        self.folder = PurePosixPath(layout.name, "apps", cluster, app)
        self.layout = layout  # the variant: renderers that look beyond their cluster read it here

    @cached_property
    def documents(self) -> list[dict[str, Any]]:
        return self.to_json()

    def output_files(self) -> list[OutputFile]:
        files = []
        for doc in self.documents:
            meta = doc["metadata"]
            parts = [meta["namespace"]] if "namespace" in meta else []
            stem = ".".join([*parts, doc["kind"].lower(), meta["name"]])
            files.append(OutputFile(self.folder / f"{stem}.yaml", [doc]))
        return files


class BootstrapChart(AppChart):
    """What the root Application syncs: `dist/<variant>/bootstrap/`."""

    def __init__(self, scope: Construct, *, variant: str) -> None:
        Chart.__init__(self, scope, f"{variant}-bootstrap", disable_resource_name_hashes=True)
        self.folder = PurePosixPath(variant, "bootstrap")


class HostFilesChart(Chart):
    """Files placed on hosts by the bootstrap runbook: `dist/<variant>/kubeadm/<cluster>/`."""

    def __init__(self, scope: Construct, *, variant: str, cluster: str) -> None:
        super().__init__(scope, f"{variant}-{cluster}-kubeadm", disable_resource_name_hashes=True)
        self.folder = PurePosixPath(variant, "kubeadm", cluster)

    def output_files(self) -> list[OutputFile]:
        host_files = [c for c in self.node.find_all() if isinstance(c, HostFile)]
        return [OutputFile(self.folder / f.file_name, f.documents(), f.header) for f in host_files]


Renderer = Callable[[AppChart, Site, ClusterLayout, list[AppSpec], AppSpec], None]


def _nodes(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    for pool in cluster.pools:
        NodePool(chart, pool.name, pool=pool)


def _namespaces(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    minor = site.versions.kubernetes.rsplit(".", 1)[0]
    for app in apps:
        if app.namespace_psa is not None:
            AppNamespace(
                chart, app.namespace, name=app.namespace, level=app.namespace_psa, kubernetes_minor=minor
            )


def _cilium_lb(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    LoadBalancerPool(chart, "Pool", cluster=cluster, interface=site.network.kubernetes.interface)


def fabric_images(site: Site) -> FabricImages:
    images = site.versions.images
    return FabricImages(
        multus=images["network-operator-multus-cni"],
        cni_plugins=images["network-operator-plugins"],
        ipoib=images["network-operator-ipoib-cni"],
        nv_ipam=images["network-operator-nvidia-k8s-ipam"],
        rdma_shared_device_plugin=images["network-operator-k8s-rdma-shared-dev-plugin"],
        doca_driver=images["network-operator-doca-driver"],
    )


def _fabric(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    tenants = [a.tenant for a in apps if a.tenant]
    RailFabric(
        chart,
        "Fabric",
        cluster=cluster,
        fabric=site.fabric,
        images=fabric_images(site),
        ipam_namespace=spec.namespace,
        tenants=tenants,
    )


def _gpu_pools(cluster: ClusterLayout) -> list[PoolLayout]:
    return [p for p in cluster.pools if p.hardware.gpu is not None]


def _gpu_queues(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    GpuQueues(chart, "Queues", pools=_gpu_pools(cluster), fabric=site.fabric)


def _tenant(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    tenant = spec.tenant or ""
    TenantQueue(chart, "Queue", tenant=tenant)
    if site.tenants[tenant].nccl_benchmark:
        NcclAllReduceJob(
            chart,
            "NcclAllReduce",
            pool=_gpu_pools(cluster)[0],
            fabric=site.fabric,
            namespace=tenant,
            queue=tenant,
            image=site.versions.images["nvidia-pytorch"],
        )


def _secret_store(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    eso = next(a for a in apps if a.name == "external-secrets")
    SecretStore(chart, "Store", secrets=site.secrets, cluster=cluster.name, namespace=eso.namespace)


def _aistor(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    tier = site.storage.aistor
    store = site.secrets.store
    ObjectStore(
        chart,
        "ObjectStore",
        name="aistor",
        namespace=spec.namespace,
        pool=cluster.pool(tier.pool),
        tier=tier,
        layout=aistor_layout(site),
        image=site.versions.images["aistor-server-rdma" if tier.rdma else "aistor-server"],
        fabric=site.fabric,
        external=cluster.system_pool.is_control_plane,  # an AIStor cluster of its own serves S3 outward
        store=store,
    )
    for app in apps:
        if app.name in ("aistor-operator", "aistor-volume-manager"):
            license_secret(chart, f"License-{app.name}", namespace=app.namespace, store=store)


def _powerscale(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    csi = next(a for a in apps if a.name == "powerscale-csi")
    PowerScaleAccess(
        chart,
        "Access",
        powerscale=site.storage.powerscale,
        release=csi.release_name,
        namespace=csi.namespace,
        store=site.secrets.store,
    )
    PowerScaleClasses(chart, "Classes", powerscale=site.storage.powerscale)
    PowerScaleSnapshots(chart, "Snapshots")


def _local_nvme(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    LocalNvmeClass(chart, "Class")


def _coredns(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    CoreDnsPlacement(chart, "CoreDns", placement=cluster.system_pool.placement)


def _gateway(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    cert_manager = next(a for a in apps if a.name == "cert-manager")
    SiteIssuer(
        chart,
        "Issuer",
        certificates=site.services.certificates,
        namespace=cert_manager.namespace,
        store=site.secrets.store,
        gateway=("site", spec.namespace),
    )
    routes = _routes(site, apps, spokes=bool(chart.layout.spokes))
    SiteGateway(
        chart,
        "Gateway",
        namespace=spec.namespace,
        placement=cluster.system_pool.placement,
        address=str(site.services.gateway.address),
        routes=routes,
    )


def _routes(site: Site, apps: list[AppSpec], *, spokes: bool) -> list[Route]:
    """The web front ends of the hub, and the door for the telemetry of the other clusters."""
    namespace = {a.name: a.namespace for a in apps}
    services = site.services
    routes = [
        Route(
            "argocd",
            namespace["argo-cd"],
            site.gitops.argocd.hostname,
            (Backend(f"{ARGOCD_FULLNAME}-server", 80),),
        ),
        Route(
            "grafana",
            namespace["grafana"],
            services.monitoring.grafana_hostname,
            (Backend(GRAFANA_SERVICE, 80),),
        ),
        # image layers take longer than any fixed request timeout
        Route(
            "harbor",
            namespace["harbor"],
            services.registry.hostname,
            (Backend(HARBOR_SERVICE, 80, timeout="0s"),),
        ),
    ]
    if "vllm" in namespace:
        routes.append(
            Route(
                "llm",
                namespace["vllm"],
                services.serving.hostname,
                # completions stream for minutes
                (Backend(ROUTER_SERVICE, ROUTER_PORT, timeout="0s"),),
            )
        )
    if spokes:
        routes.append(
            Route(
                "telemetry",
                namespace["otel-gateway"],
                services.monitoring.telemetry_hostname,
                (
                    Backend(PROMETHEUS_SERVICE, 9090, path="/api/v1/write"),
                    Backend(OTEL_GATEWAY, OTLP_HTTP_PORT, path="/v1/logs"),
                ),
                basic_auth=TELEMETRY_USERS,
            )
        )
    return routes


def _observability(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    store = site.secrets.store
    names = {a.name: a for a in apps}
    PodMonitors(chart, "Cilium", namespace=spec.namespace, targets=CILIUM_TARGETS)
    if "grafana" not in names:
        # a cluster without the stack: the credentials its agents deliver to the hub with
        VaultSecret(
            chart,
            "RemoteWrite",
            name=REMOTE_WRITE_SECRET,
            namespace=spec.namespace,
            store=store,
            key="telemetry/client",
            properties=["username", "password"],
            template={
                "username": "{{ .username }}",
                "password": "{{ .password }}",
                "basic": '{{ printf "%s:%s" .username .password | b64enc }}',
            },
        )
        if trusts_site_ca(site):
            # the certificate only, never the key
            VaultSecret(
                chart,
                "SiteCA",
                name=SITE_CA_SECRET,
                namespace=spec.namespace,
                store=store,
                key="pki/site-ca",
                properties=[SITE_CA_KEY],
            )
        return
    SiteAlerts(chart, "Alerts", namespace=spec.namespace, risks=site_risks(site, chart.layout))
    grafana = names["grafana"].namespace
    Dashboards(chart, "Dashboards", namespace=grafana, dashboards=dict(site.dashboards))
    VaultSecret(
        chart,
        "GrafanaAdmin",
        name=GRAFANA_ADMIN_SECRET,
        namespace=grafana,
        store=store,
        key="grafana/admin",
        properties=["admin-user", "admin-password"],
    )
    loki = names["loki"].namespace
    VaultSecret(
        chart,
        "LokiS3",
        name=LOKI_S3_SECRET,
        namespace=loki,
        store=store,
        key="aistor/users/loki",
        properties=["access_key", "secret_key"],
        template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
    )
    aistor_ca(chart, "LokiAIStorCA", namespace=loki, store=store)
    if chart.layout.spokes:
        # htpasswd lines ({SHA}) of the clients that deliver telemetry from the other clusters
        VaultSecret(
            chart,
            "TelemetryUsers",
            name=TELEMETRY_USERS,
            namespace=names["otel-gateway"].namespace,
            store=store,
            key="telemetry/htpasswd",
            properties=[".htpasswd"],
        )


def aistor_ca(chart: Construct, id: str, *, namespace: str, store: str) -> None:
    VaultSecret(
        chart,
        id,
        name=AISTOR_CA_SECRET,
        namespace=namespace,
        store=store,
        key="aistor/ca",
        properties=["ca.crt"],
    )


def site_risks(site: Site, layout: VariantLayout) -> SiteRisks:
    """The risks of every cluster of the variant: the hub evaluates the rules, on its own series and on
    those the other clusters' agents write to it."""
    pools = [p for c in layout.clusters for p in c.pools]
    return SiteRisks(
        gpus_per_node={
            p.name: (p.hardware.gpu.count, tuple(h.name for h in p.hosts))
            for p in pools
            if p.hardware.gpu is not None
        },
        fabric_pools=tuple(
            FabricPool(p.name, tuple(nic.name for nic in site.fabric.nics[p.name]))
            for p in pools
            if p.name in site.fabric.nics
        ),
        aistor_parity=aistor_layout(site).parity
        if any(p.name == site.storage.aistor.pool for p in pools)
        else None,
    )


def _harbor_config(
    chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec
) -> None:
    store = site.secrets.store
    aistor = site.services.registry.storage == "aistor"
    HarborSecrets(
        chart,
        "Secrets",
        namespace=spec.namespace,
        store=store,
        s3_secret=HARBOR_S3_SECRET if aistor else None,
    )
    if aistor:
        aistor_ca(chart, "AIStorCA", namespace=spec.namespace, store=store)
    ProxyCacheProjects(
        chart,
        "ProxyCaches",
        registry=site.services.registry,
        namespace=spec.namespace,
        api=f"http://{HARBOR_SERVICE}.{spec.namespace}.svc.{cluster.spec.dns_domain}/api/v2.0",
        image=site.versions.images["curl"],
        placement=cluster.system_pool.placement,
    )


def _models(chart: AppChart, site: Site, cluster: ClusterLayout, apps: list[AppSpec], spec: AppSpec) -> None:
    ServingModels(
        chart,
        "Models",
        serving=site.services.serving,
        cluster=cluster,
        fabric=site.fabric,
        image=site.versions.images["vllm-openai"],
        store=site.secrets.store,
    )


RENDERED: dict[str, Renderer] = {
    "observability": _observability,
    "harbor-config": _harbor_config,
    "models": _models,
    "coredns": _coredns,
    "gateway": _gateway,
    "secret-store": _secret_store,
    "aistor": _aistor,
    "powerscale": _powerscale,
    "local-nvme": _local_nvme,
    "nodes": _nodes,
    "namespaces": _namespaces,
    "cilium-lb": _cilium_lb,
    "fabric": _fabric,
    "gpu-queues": _gpu_queues,
}


def _renderer(spec: AppSpec) -> Renderer:
    return _tenant if spec.tenant else RENDERED[spec.name]


def values_path(variant: str, cluster: str, app: str) -> PurePosixPath:
    return PurePosixPath(variant, "values", cluster, f"{app}.yaml")


class VariantBuild:
    """Everything one variant renders, kept together so the bootstrap can see every app."""

    def __init__(self, app: App, site: Site, layout: VariantLayout) -> None:
        self.site = site
        self.layout = layout
        self.app_charts: dict[tuple[str, str], AppChart] = {}
        self.values_files: list[OutputFile] = []
        self.host_charts: list[HostFilesChart] = []
        self.apps = {c.name: cluster_apps(site, layout, c) for c in layout.clusters}
        for cluster in layout.clusters:
            self._build_cluster(app, cluster)
        self.bootstrap = BootstrapChart(app, variant=layout.name)
        self._build_bootstrap()

    def _build_cluster(self, app: App, cluster: ClusterLayout) -> None:
        variant = self.layout.name
        apps = self.apps[cluster.name]
        for spec in apps:
            if spec.rendered:
                chart = AppChart(app, layout=self.layout, cluster=cluster.name, app=spec.name)
                _renderer(spec)(chart, self.site, cluster, apps, spec)
                self.app_charts[(cluster.name, spec.name)] = chart
            else:
                values = chart_values(self.site, self.layout, cluster, spec.name)
                pin = self.site.versions.charts[spec.chart or ""]
                header = f"Helm values for chart {pin.chart} {pin.version} ({pin.repo}), app {spec.name}."
                self.values_files.append(
                    OutputFile(values_path(variant, cluster.name, spec.name), [values.document()], header)
                )

        host_files = HostFilesChart(app, variant=variant, cluster=cluster.name)
        KubeadmConfigs(
            host_files,
            "Kubeadm",
            cluster=cluster,
            kubernetes_version=self.site.versions.kubernetes,
            # GPU pods need IPC_LOCK for RDMA, which no Pod Security level but privileged allows.
            psa_exempt_runtime_classes=[RUNTIME_CLASS] if _gpu_pools(cluster) else [],
        )
        for bootstrap in (True, False):
            KubeVipStaticPod(
                host_files,
                "KubeVipInit" if bootstrap else "KubeVip",
                cluster=cluster,
                image=self.site.versions.images["kube-vip"],
                interface=self.site.network.kubernetes.interface,
                bootstrap=bootstrap,
            )
        self.host_charts.append(host_files)

    def element(self, cluster: ClusterLayout, spec: AppSpec) -> dict[str, Any]:
        """One list-generator element: every field the ApplicationSet template reads, as strings."""
        variant = self.layout.name
        common = {
            "cluster": cluster.name,
            "app": spec.name,
            "layer": spec.layer.name.lower(),
            "wave": str(spec.wave),
            "server": self.layout.server(cluster),
            "namespace": spec.namespace,
            "syncOptions": spec.sync_options,
        }
        if spec.rendered:
            path = REPO_DIST / variant / "apps" / cluster.name / spec.name
            return {**common, "path": str(path), "watch": f"/{path}"}
        pin = self.site.versions.charts[spec.chart or ""]
        values = REPO_DIST / values_path(variant, cluster.name, spec.name)
        return {
            **common,
            "chartRepo": pin.argo_repo,
            "chart": pin.chart,
            "chartVersion": pin.version,
            "release": spec.release_name,
            "values": str(values),
            "watch": f"/{values}",
        }

    def _rendered_kinds(self, cluster: str, app: str, *, namespaced: bool) -> list[GroupKind]:
        docs = self.app_charts[(cluster, app)].documents
        return [
            GroupKind(d["apiVersion"].rpartition("/")[0], d["kind"])
            for d in docs
            if ("namespace" in d["metadata"]) == namespaced
        ]

    def _rendered_namespaces(self, cluster: str, app: str) -> set[str]:
        return {
            d["metadata"]["namespace"]
            for d in self.app_charts[(cluster, app)].documents
            if "namespace" in d["metadata"]
        }

    def _build_bootstrap(self) -> None:
        gitops = self.site.gitops
        argocd_ns = gitops.argocd.namespace
        chart = self.bootstrap
        LockedDefaultProject(chart, "DefaultProject", namespace=argocd_ns)
        AppProject(
            chart,
            "BootstrapProject",
            name=BOOTSTRAP_PROJECT.name,
            namespace=argocd_ns,
            description=BOOTSTRAP_PROJECT.description,
            source_repos=[gitops.repo_url],
            destinations=[Destination(self.layout.server(self.layout.hub), argocd_ns)],
            cluster_kinds=[],
            namespace_kinds=[
                GroupKind("argoproj.io", "AppProject"),
                GroupKind("argoproj.io", "ApplicationSet"),
                GroupKind("argoproj.io", "Application"),
                GroupKind("external-secrets.io", "ExternalSecret"),
            ],
        )
        for project in PROJECTS.values():
            members = [
                (c, s) for c in self.layout.clusters for s in self.apps[c.name] if s.project == project.name
            ]
            if not members:
                continue
            charts = [s for _, s in members if not s.rendered]
            namespace_kinds = None
            if not charts:
                namespace_kinds = [
                    k for c, s in members for k in self._rendered_kinds(c.name, s.name, namespaced=True)
                ]
            AppProject(
                chart,
                f"Project-{project.name}",
                name=project.name,
                namespace=argocd_ns,
                description=project.description,
                source_repos=[
                    gitops.repo_url,
                    *(self.site.versions.charts[s.chart or ""].argo_repo for s in charts),
                ],
                destinations=[
                    *(Destination(self.layout.server(c), s.namespace) for c, s in members),
                    *(
                        Destination(self.layout.server(c), ns)
                        for c, s in members
                        if s.rendered
                        for ns in self._rendered_namespaces(c.name, s.name)
                    ),
                ],
                cluster_kinds=[
                    *(GroupKind(*k) for s in charts for k in s.chart_cluster_kinds),
                    *(
                        k
                        for c, s in members
                        if s.rendered
                        for k in self._rendered_kinds(c.name, s.name, namespaced=False)
                    ),
                ],
                namespace_kinds=namespace_kinds,
            )
            for rendered in (True, False):
                elements = [self.element(c, s) for c, s in members if s.rendered == rendered]
                if elements:
                    kind = "rendered" if rendered else "charts"
                    AppSet(
                        chart,
                        f"AppSet-{project.name}-{kind}",
                        name=f"{project.name}-{kind}",
                        namespace=argocd_ns,
                        project=project.name,
                        rendered=rendered,
                        elements=elements,
                        repo_url=gitops.repo_url,
                        revision=gitops.revision,
                    )
        hub = self.layout.hub
        RepositoryCredentials(
            chart,
            "RepoCredentials",
            repo_url=gitops.repo_url,
            namespace=argocd_ns,
            secret_store=self.site.secrets.store,
        )
        RootApplication(
            chart,
            "Root",
            namespace=argocd_ns,
            project=BOOTSTRAP_PROJECT.name,
            path=str(REPO_DIST / self.layout.name / "bootstrap"),
            repo_url=gitops.repo_url,
            revision=gitops.revision,
            server=self.layout.server(hub),
        )
        for cluster in self.layout.clusters:
            if cluster.name != hub.name:
                ClusterRegistration(
                    chart,
                    f"Cluster-{cluster.name}",
                    cluster=cluster.name,
                    variant=self.layout.name,
                    server=self.layout.server(cluster),
                    namespace=argocd_ns,
                    secret_store=self.site.secrets.store,
                )

    def output_files(self) -> list[OutputFile]:
        files = [f for chart in self.app_charts.values() for f in chart.output_files()]
        files += self.values_files
        files += [f for chart in self.host_charts for f in chart.output_files()]
        files += self.bootstrap.output_files()
        files.append(
            OutputFile(PurePosixPath(self.layout.name, "bootstrap", "RUNBOOK.md"), [], text=runbook(self))
        )
        files += mirror_files(self.site, self.layout.name)
        return files


def synthesize(site: Site, variants: list[str]) -> list[OutputFile]:
    """Every output file of the given variants, in a stable order."""
    app = App()
    files = [f for v in variants for f in VariantBuild(app, site, resolve(site, v)).output_files()]
    return sorted(files, key=lambda f: f.path)
