"""Compose each cluster of a variant into charts, and turn the charts into dist/ files.

Each AppChart is exactly one Argo CD Application (one folder of dist/); HostFilesChart holds the
files a human places on hosts at bootstrap (kubeadm/). No chart depends on another, so nothing
here relies on cdk8s's own file naming.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from cdk8s import App, Chart

from constructs import Construct
from constructs.host_file import HostFile
from constructs.kube_vip import KubeVipStaticPod
from constructs.kubeadm import KubeadmConfigs
from constructs.node_pool import NodePool
from sitegen.dist import OutputFile
from sitegen.layout import ClusterLayout, VariantLayout, resolve
from sitegen.model import Site


class AppChart(Chart):
    """One Argo CD Application: `dist/<variant>/apps/<cluster>/<app>/`, one file per object."""

    def __init__(self, scope: Construct, *, variant: str, cluster: str, app: str) -> None:
        super().__init__(scope, f"{variant}-{cluster}-{app}", disable_resource_name_hashes=True)
        self.folder = PurePosixPath(variant, "apps", cluster, app)

    def output_files(self) -> list[OutputFile]:
        files = []
        for doc in self.to_json():
            meta = doc["metadata"]
            parts = [meta["namespace"]] if "namespace" in meta else []
            stem = ".".join([*parts, doc["kind"].lower(), meta["name"]])
            files.append(OutputFile(self.folder / f"{stem}.yaml", [doc]))
        return files


class HostFilesChart(Chart):
    """Files placed on hosts by the bootstrap runbook: `dist/<variant>/kubeadm/<cluster>/`."""

    def __init__(self, scope: Construct, *, variant: str, cluster: str) -> None:
        super().__init__(scope, f"{variant}-{cluster}-kubeadm", disable_resource_name_hashes=True)
        self.folder = PurePosixPath(variant, "kubeadm", cluster)

    def output_files(self) -> list[OutputFile]:
        host_files = [c for c in self.node.find_all() if isinstance(c, HostFile)]
        return [OutputFile(self.folder / f.file_name, f.documents(), f.header) for f in host_files]


def build_cluster(
    app: App, site: Site, variant: str, cluster: ClusterLayout
) -> list[AppChart | HostFilesChart]:
    nodes = AppChart(app, variant=variant, cluster=cluster.name, app="nodes")
    for pool in cluster.pools:
        NodePool(nodes, pool.name, pool=pool)

    host_files = HostFilesChart(app, variant=variant, cluster=cluster.name)
    KubeadmConfigs(host_files, "Kubeadm", cluster=cluster, kubernetes_version=site.versions.kubernetes)
    for bootstrap in (True, False):
        KubeVipStaticPod(
            host_files,
            "KubeVipInit" if bootstrap else "KubeVip",
            cluster=cluster,
            image=site.versions.images["kube-vip"],
            interface=site.network.kubernetes.interface,
            bootstrap=bootstrap,
        )
    return [nodes, host_files]


def build_variant(app: App, site: Site, layout: VariantLayout) -> list[AppChart | HostFilesChart]:
    return [chart for cluster in layout.clusters for chart in build_cluster(app, site, layout.name, cluster)]


def synthesize(site: Site, variants: list[str]) -> list[OutputFile]:
    """Every output file of the given variants, in a stable order."""
    app = App()
    charts = [chart for v in variants for chart in build_variant(app, site, resolve(site, v))]
    files = [f for chart in charts for f in chart.output_files()]
    return sorted(files, key=lambda f: f.path)
