"""The Argo CD Applications of each cluster: what they deploy, in which project, layer and namespace.

An app is either rendered by cdk8s (`dist/<variant>/apps/<cluster>/<app>/`) or an upstream Helm chart
at its pinned version with generated values (`dist/<variant>/values/<cluster>/<app>.yaml`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site

PsaLevel = Literal["privileged", "baseline", "restricted"]


class Layer(IntEnum):
    """Argo CD has no dependencies between Applications; layers order them by sync wave."""

    FOUNDATION = 0  # namespaces, node labels, CNI, CRDs and operators, Argo CD itself
    RESOURCES = 1  # custom resources of those operators
    SERVICES = 2  # cluster services
    TENANTS = 3  # workloads of the site's users


ADMISSION_MUTATING = ("admissionregistration.k8s.io", "MutatingWebhookConfiguration")
ADMISSION_VALIDATING = ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")
CSI_DRIVER = ("storage.k8s.io", "CSIDriver")
STORAGE_CLASS = ("storage.k8s.io", "StorageClass")
PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")
RBAC_CLUSTER_ROLE = ("rbac.authorization.k8s.io", "ClusterRole")
RBAC_CLUSTER_ROLE_BINDING = ("rbac.authorization.k8s.io", "ClusterRoleBinding")
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")

# Namespaces other apps' values address services in.
MONITORING_NS = "monitoring"
GRAFANA_NS = "grafana"
LOKI_NS = "loki"
OTEL_OPERATOR_NS = "opentelemetry-operator-system"
HARBOR_NS = "harbor"


@dataclass(frozen=True)
class Project:
    name: str
    description: str


PROJECTS = {
    p.name: p
    for p in (
        Project("platform", "namespaces and Argo CD itself"),
        Project("platform-nodes", "labels of every Node, applied server-side and never pruned"),
        Project("networking", "the primary CNI, load-balancer addresses and the NDR rails"),
        Project("hardware", "hardware discovery: the cluster's single Node Feature Discovery"),
        Project("gpu", "the GPU pool: GPU Operator, Kueue and its queues"),
        Project("storage", "AIStor, PowerScale CSI and the local NVMe cache"),
        Project("edge", "certificates, the Gateway and the routes to the platform's web front ends"),
        Project("observability", "metrics, alerts, dashboards, logs and the collectors on every node"),
        Project("registry", "Harbor: the site's image registry and pull-through caches"),
        Project("serving", "AI serving: the vLLM router and the model servers behind it"),
        Project("tenants", "the site's users: their namespaces, queues and workloads"),
    )
}
BOOTSTRAP_PROJECT = Project(
    "bootstrap", "the root Application: AppProjects, ApplicationSets, cluster registrations"
)


@dataclass(frozen=True)
class AppSpec:
    name: str
    project: str
    layer: Layer
    namespace: str  # destination namespace; cluster-scoped-only apps use kube-system, which always exists
    order: int = 0  # position inside the layer (sync wave = 10 * layer + order)
    chart: str | None = None  # key of versions.charts; None means rendered by cdk8s
    # Cluster-scoped (group, kind)s an upstream chart renders (reviewed; rendered apps are read from dist/).
    chart_cluster_kinds: tuple[tuple[str, str], ...] = ()
    namespace_psa: PsaLevel | None = None  # the namespace's Pod Security level; None: not ours to create
    # CRs whose CRD another app installs: skip the dry run until it exists (retries cover the gap).
    skip_dry_run: bool = False
    tenant: str | None = None  # tenant apps: whose workloads these are
    release: str | None = None  # Helm release name when the chart derives object names from it

    @property
    def release_name(self) -> str:
        return self.release or self.name

    @property
    def wave(self) -> int:
        return 10 * int(self.layer) + self.order

    @property
    def rendered(self) -> bool:
        return self.chart is None

    @property
    def sync_options(self) -> list[str]:
        # Server-side apply everywhere: large CRDs (ApplicationSet is 1.4 MB) exceed the client-side
        # last-applied annotation, and partial Node objects need it.
        options = ["ServerSideApply=true"]
        if self.skip_dry_run:
            options.append("SkipDryRunOnMissingResource=true")
        return options


def cluster_apps(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> list[AppSpec]:
    """Every app of one cluster, sorted by wave then name."""
    is_hub = cluster.name == layout.hub.name
    has_gpus = any(p.hardware.gpu is not None for p in cluster.pools)
    on_fabric = any(p.name in site.fabric.nics for p in cluster.pools)
    rbac = (RBAC_CLUSTER_ROLE, RBAC_CLUSTER_ROLE_BINDING)
    apps = [
        AppSpec("nodes", "platform-nodes", Layer.FOUNDATION, "kube-system"),
        AppSpec(
            "cilium",
            "networking",
            Layer.FOUNDATION,
            "kube-system",
            order=1,
            chart="cilium",
            chart_cluster_kinds=rbac,
        ),
        # The LB-IPAM CRD is registered by the Cilium operator at run time.
        AppSpec("cilium-lb", "networking", Layer.RESOURCES, "kube-system", skip_dry_run=True),
    ]
    if is_hub:
        apps.append(
            AppSpec(
                "argo-cd",
                "platform",
                Layer.FOUNDATION,
                site.gitops.argocd.namespace,
                order=2,
                chart="argo-cd",
                chart_cluster_kinds=(*rbac, CRD),
                # The chart's redis-ha and haproxy are not verified against `restricted`; audit and warn are.
                namespace_psa="baseline",
            )
        )
    if has_gpus or on_fabric:
        apps.append(
            AppSpec(
                "node-feature-discovery",
                "hardware",
                Layer.FOUNDATION,
                "node-feature-discovery",
                order=3,
                chart="node-feature-discovery",
                chart_cluster_kinds=(*rbac, CRD),
                namespace_psa="privileged",
            )  # the worker mounts host paths to read hardware
        )
    if on_fabric:
        apps += [
            AppSpec(
                "network-operator",
                "networking",
                Layer.FOUNDATION,
                "nvidia-network-operator",
                order=4,
                chart="network-operator",
                chart_cluster_kinds=(*rbac, CRD, ADMISSION_VALIDATING),
                namespace_psa="privileged",
            ),  # device plugins, Multus and CNI installers on the host
            AppSpec(
                "fabric", "networking", Layer.RESOURCES, "nvidia-network-operator", order=1, skip_dry_run=True
            ),
        ]
    if has_gpus:
        apps += [
            AppSpec(
                "gpu-operator",
                "gpu",
                Layer.FOUNDATION,
                "gpu-operator",
                order=4,
                chart="gpu-operator",
                chart_cluster_kinds=(*rbac, CRD, ("nvidia.com", "ClusterPolicy")),
                namespace_psa="privileged",
            ),  # driver, toolkit and device plugin run privileged
            AppSpec(
                "kueue",
                "gpu",
                Layer.FOUNDATION,
                "kueue-system",
                order=4,
                chart="kueue",
                chart_cluster_kinds=(*rbac, CRD, ADMISSION_MUTATING, ADMISSION_VALIDATING),
                namespace_psa="baseline",
            ),
            AppSpec("gpu-queues", "gpu", Layer.RESOURCES, "kube-system", order=2, skip_dry_run=True),
        ]
        apps += [
            AppSpec(
                f"tenant-{name}",
                "tenants",
                Layer.TENANTS,
                name,
                skip_dry_run=True,
                tenant=name,
                # baseline, and GPU pods (RuntimeClass nvidia) are exempt: RDMA needs IPC_LOCK
                namespace_psa="baseline",
            )
            for name in site.tenants
        ]
    apps += _secrets_and_storage(site, cluster, rbac)
    apps += _services(site, cluster, rbac, is_hub)
    apps += _observability(cluster, rbac, is_hub)
    if is_hub:
        apps += _registry_and_serving(site, has_gpus)
    if any(a.namespace_psa for a in apps):
        apps.append(AppSpec("namespaces", "platform", Layer.FOUNDATION, "kube-system", order=0))
    return sorted(apps, key=lambda a: (a.wave, a.name))


def _secrets_and_storage(
    site: Site, cluster: ClusterLayout, rbac: tuple[tuple[str, str], ...]
) -> list[AppSpec]:
    names = {p.name for p in cluster.pools}
    storage = site.storage
    apps = [
        AppSpec(
            "external-secrets",
            "platform",
            Layer.FOUNDATION,
            "external-secrets",
            order=5,
            chart="external-secrets",
            chart_cluster_kinds=(*rbac, CRD, ADMISSION_VALIDATING),
            namespace_psa="baseline",
        ),
        AppSpec("secret-store", "platform", Layer.RESOURCES, "kube-system", order=0, skip_dry_run=True),
    ]
    if storage.aistor.pool in names:
        apps += [
            AppSpec(
                "aistor-volume-manager",
                "storage",
                Layer.FOUNDATION,
                "aistor-volume-manager",
                order=6,
                chart="aistor-volumemanager",
                chart_cluster_kinds=(*rbac, CRD, CSI_DRIVER, STORAGE_CLASS),
                namespace_psa="privileged",
            ),  # CSI node server formats and mounts the drives
            AppSpec(
                "aistor-operator",
                "storage",
                Layer.FOUNDATION,
                "aistor-operator",
                order=6,
                chart="aistor-operator",
                chart_cluster_kinds=(*rbac, CRD, ADMISSION_VALIDATING, ADMISSION_MUTATING),
                namespace_psa="baseline",
            ),
            AppSpec(
                "aistor",
                "storage",
                Layer.RESOURCES,
                "aistor",
                order=3,
                skip_dry_run=True,
                namespace_psa="baseline",
            ),
        ]
    if names & set(storage.powerscale.mount_pools):
        apps += [
            AppSpec(
                "powerscale-csi",
                "storage",
                Layer.FOUNDATION,
                "isilon",
                order=6,
                chart="csi-isilon",
                release="isilon",  # the chart mounts the Secrets `<release>-creds` and `<release>-certs-0`
                chart_cluster_kinds=(*rbac, CSI_DRIVER),
                namespace_psa="privileged",
            ),  # the node plugin mounts NFS for the kubelet
            AppSpec("powerscale", "storage", Layer.RESOURCES, "isilon", order=3, skip_dry_run=True),
        ]
    if names & set(storage.local_cache.pools):
        apps += [
            AppSpec(
                "topolvm",
                "storage",
                Layer.FOUNDATION,
                "topolvm-system",
                order=6,
                chart="topolvm",
                chart_cluster_kinds=(*rbac, CRD, CSI_DRIVER, PRIORITY_CLASS),
                namespace_psa="privileged",
            ),  # lvmd manages the volume group on the host
            AppSpec("local-nvme", "storage", Layer.RESOURCES, "kube-system", order=3),
        ]
    return apps


def _services(
    site: Site, cluster: ClusterLayout, rbac: tuple[tuple[str, str], ...], is_hub: bool
) -> list[AppSpec]:
    apps = [
        # kubeadm's CoreDNS, kept on the system pool by a partial Deployment
        AppSpec("coredns", "platform", Layer.SERVICES, "kube-system", order=0),
        AppSpec(
            "metrics-server",
            "platform",
            Layer.FOUNDATION,
            "kube-system",
            order=7,
            chart="metrics-server",
            chart_cluster_kinds=(*rbac, ("apiregistration.k8s.io", "APIService")),
        ),
    ]
    if is_hub:
        apps += [
            AppSpec(
                "cert-manager",
                "edge",
                Layer.FOUNDATION,
                "cert-manager",
                order=7,
                chart="cert-manager",
                chart_cluster_kinds=(*rbac, CRD, ADMISSION_MUTATING, ADMISSION_VALIDATING),
                namespace_psa="restricted",
            ),
            AppSpec(
                "envoy-gateway",
                "edge",
                Layer.FOUNDATION,
                "envoy-gateway-system",
                order=7,
                chart="envoy-gateway",
                chart_cluster_kinds=(*rbac, CRD, ADMISSION_MUTATING, ADMISSION_VALIDATING),
                namespace_psa="baseline",
            ),
            AppSpec("gateway", "edge", Layer.RESOURCES, "envoy-gateway-system", order=4, skip_dry_run=True),
        ]
    return apps


def _observability(cluster: ClusterLayout, rbac: tuple[tuple[str, str], ...], is_hub: bool) -> list[AppSpec]:
    """The hub runs the whole stack; another cluster only its node agents, a Prometheus agent and
    the log collector, both delivering to the hub."""
    webhooks = (ADMISSION_MUTATING, ADMISSION_VALIDATING)
    apps = [
        AppSpec(
            "kube-prometheus-stack",
            "observability",
            Layer.FOUNDATION,
            MONITORING_NS,
            order=2,  # its CRDs (ServiceMonitor, PrometheusRule) come before every chart's monitors
            chart="kube-prometheus-stack",
            chart_cluster_kinds=(*rbac, CRD, *webhooks),
            # node-exporter uses the host's network and PID namespaces, smartctl reads the drives,
            # the log collector reads /var/log/pods
            namespace_psa="privileged",
        ),
        AppSpec(
            "smartctl-exporter",
            "observability",
            Layer.SERVICES,
            MONITORING_NS,
            order=1,
            chart="prometheus-smartctl-exporter",
        ),
        AppSpec(
            "otel-node",
            "observability",
            Layer.SERVICES,
            MONITORING_NS,
            order=2,
            chart="opentelemetry-collector",
            chart_cluster_kinds=rbac,  # k8sattributes reads pods and namespaces
        ),
        AppSpec("observability", "observability", Layer.RESOURCES, MONITORING_NS, order=5, skip_dry_run=True),
    ]
    if is_hub:
        apps += [
            AppSpec(
                "opentelemetry-operator",
                "observability",
                Layer.FOUNDATION,
                OTEL_OPERATOR_NS,
                order=8,
                chart="opentelemetry-operator",
                chart_cluster_kinds=(*rbac, CRD, *webhooks),
                namespace_psa="restricted",
            ),
            AppSpec(
                "loki",
                "observability",
                Layer.SERVICES,
                LOKI_NS,
                order=1,
                chart="loki",
                chart_cluster_kinds=rbac,  # the rules sidecar watches ConfigMaps cluster-wide
                namespace_psa="baseline",
            ),
            AppSpec(
                "otel-gateway",
                "observability",
                Layer.SERVICES,
                MONITORING_NS,
                order=2,
                chart="opentelemetry-collector",
            ),
            AppSpec(
                "grafana",
                "observability",
                Layer.SERVICES,
                GRAFANA_NS,
                order=3,
                chart="grafana",
                chart_cluster_kinds=rbac,  # the dashboards sidecar watches ConfigMaps cluster-wide
                namespace_psa="baseline",
            ),
        ]
    return apps


def _registry_and_serving(site: Site, has_gpus: bool) -> list[AppSpec]:
    apps = [
        AppSpec(
            "harbor",
            "registry",
            Layer.SERVICES,
            HARBOR_NS,
            order=1,
            chart="harbor",
            namespace_psa="baseline",
        ),
        AppSpec("harbor-config", "registry", Layer.RESOURCES, HARBOR_NS, order=5, skip_dry_run=True),
    ]
    if has_gpus:
        tenant = site.services.serving.tenant
        apps += [
            AppSpec("vllm", "serving", Layer.SERVICES, tenant, order=4, chart="vllm-stack"),
            AppSpec("models", "serving", Layer.TENANTS, tenant, order=1, skip_dry_run=True),
        ]
    return apps
