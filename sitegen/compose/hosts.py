"""What the bootstrap places on hosts: kubeadm configs, the kube-vip static pod and API server
policies per cluster, and the containerd mirrors every host pulls through.

One `hosts.toml` per upstream registry (containerd's `config_path` layout): the upstream stays the
fallback, so nodes pull before Harbor exists (bootstrap) and while it is down.
"""

from __future__ import annotations

from constructs import Construct
from constructs.kube_vip import KubeVipStaticPod
from constructs.kubeadm import (
    ETCD_PATCH,
    PATCHES_DIR,
    KubeadmConfigs,
    etcd_metrics_patch,
    etcd_patch_file,
)
from sitegen.compose.charts import HostFilesChart
from sitegen.compose.writer import OutputFile
from sitegen.model import ClusterLayout, Site, paths

HOST_IMAGES = {"kube-vip": "the API VIP static pod", "pause": "containerd's sandbox image on every host"}


def host_files(scope: Construct, site: Site, variant: str, cluster: ClusterLayout) -> HostFilesChart:
    chart = HostFilesChart(
        scope, f"{variant}-{cluster.name}-kubeadm", folder=paths.kubeadm_dir(variant, cluster.name)
    )
    KubeadmConfigs(
        chart,
        "Kubeadm",
        cluster=cluster,
        kubernetes_version=site.versions.kubernetes,
    )
    for bootstrap in (True, False):
        KubeVipStaticPod(
            chart,
            "KubeVipInit" if bootstrap else "KubeVip",
            cluster=cluster,
            image=site.versions.images["kube-vip"],
            interface=site.network.kubernetes.interface,
            bootstrap=bootstrap,
        )
    return chart


def etcd_patches(variant: str, cluster: ClusterLayout) -> list[OutputFile]:
    """Each control-plane member's etcd patch (JSON patch in YAML: not an object, so written as text)."""
    folder = paths.kubeadm_dir(variant, cluster.name)
    return [
        OutputFile(
            folder / etcd_patch_file(host.name),
            [],
            f"On {host.name}, before kubeadm init/join: {PATCHES_DIR}/{ETCD_PATCH}",
            text=etcd_metrics_patch(host),
        )
        for host in cluster.control_plane.hosts
    ]


# Where a host's hosts.toml takes base64("robot$node-pull:<secret>"): the proxy projects are private.
PULL_AUTH_PLACEHOLDER = "@HARBOR_PULL_AUTH@"


def mirror_files(site: Site, variant: str) -> list[OutputFile]:
    registry = site.services.registry
    files = []
    for project, cache in sorted(registry.proxy_cache.items()):
        header = (
            f"registry.proxy_cache.{project} of config/services.yaml.\n"
            f"On every host: /etc/containerd/{paths.CERTS_D}/{cache.registry}/hosts.toml"
        )
        mirror = f"https://{registry.hostname}/v2/{project}"
        text = (
            f'server = "{cache.api}"\n'
            "\n"
            f'[host."{mirror}"]\n'
            '  capabilities = ["pull", "resolve"]\n'
            "  override_path = true\n"
            f'  [host."{mirror}".header]\n'
            "    # the pull robot's, filled in on the host from the vault (RUNBOOK); a secret never in git\n"
            f'    authorization = "Basic {PULL_AUTH_PLACEHOLDER}"\n'
        )
        files.append(OutputFile(paths.mirror_file(variant, cache.registry), [], header, text=text))
    return files
