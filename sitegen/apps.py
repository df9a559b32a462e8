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


RBAC_CLUSTER_ROLE = ("rbac.authorization.k8s.io", "ClusterRole")
RBAC_CLUSTER_ROLE_BINDING = ("rbac.authorization.k8s.io", "ClusterRoleBinding")
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


@dataclass(frozen=True)
class Project:
    name: str
    description: str


PROJECTS = {
    p.name: p
    for p in (
        Project("platform", "namespaces and Argo CD itself"),
        Project("platform-nodes", "labels of every Node, applied server-side and never pruned"),
        Project("networking", "the primary CNI and the fabric"),
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
    apps = [
        AppSpec("nodes", "platform-nodes", Layer.FOUNDATION, "kube-system"),
        AppSpec(
            "cilium",
            "networking",
            Layer.FOUNDATION,
            "kube-system",
            order=1,
            chart="cilium",
            chart_cluster_kinds=(RBAC_CLUSTER_ROLE, RBAC_CLUSTER_ROLE_BINDING),
        ),
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
                chart_cluster_kinds=(RBAC_CLUSTER_ROLE, RBAC_CLUSTER_ROLE_BINDING, CRD),
                # The chart's redis-ha and haproxy are not verified against `restricted`; audit and warn are.
                namespace_psa="baseline",
            )
        )
    if any(a.namespace_psa for a in apps):
        apps.append(AppSpec("namespaces", "platform", Layer.FOUNDATION, "kube-system", order=0))
    return sorted(apps, key=lambda a: (a.wave, a.name))
