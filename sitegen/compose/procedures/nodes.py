"""A cluster's nodes once joined: their pools' labels and the namespaces, then the local NVMe cache's
volume group on the hosts of its pools."""

from __future__ import annotations

from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform_nodes.node_labels import NodeLabels
from sitegen.compose.apps import VariantApps
from sitegen.compose.local_cache import cache_script_name
from sitegen.model import ClusterLayout, PoolLayout, paths
from sitegen.tree.runbook import Runbook


def label_nodes(pool: PoolLayout, names: list[str]) -> str:
    """The command that gives nodes their pool's labels at once (the node labeler would within its
    schedule)."""
    pairs = " ".join(f"{k}={v}" for k, v in sorted(pool.labels.items()))
    return f"kubectl label node --overwrite {' '.join(names)} \\\n  {pairs}"


def volume_group(variant: str, cluster: ClusterLayout, pool: PoolLayout) -> str:
    """The local NVMe cache's LVM volume group on a host of `pool` (TopoLVM carves the cache volumes
    from it): the script picks the empty drives of the model's size itself."""
    script = paths.in_repo(paths.kubeadm_dir(variant, cluster.name) / cache_script_name(pool))
    return f"bash {script}   # on every {pool.name} host"


def node_labels(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    app_dir = paths.in_repo(paths.cluster_apps_dir(apps.layout.name, cluster.name))
    namespaces = (
        f"kubectl apply --server-side -f {app_dir}/{Namespaces.name}/\n"
        if apps.context(cluster).has(Namespaces)
        else ""
    )
    label_lines = "\n".join(label_nodes(pool, [h.name for h in pool.hosts]) for pool in cluster.pools)
    book.step(
        "Node labels and namespaces",
        f"""
Nodes stay NotReady until the CNI runs; their pools' labels go on now, by hand this once, since the
system pool's services select them (a kubelet may not set `node-role.kubernetes.io/*` itself). Later the
`{NodeLabels.name}` CronJob labels every listed host that joins, and fails when a node lacks its pool's taints;
no Node object is ever applied from Git (that would make a joining kubelet skip its taints).

```sh
{label_lines}
{namespaces}kubectl get nodes -o custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].value
```
""",
    )


def local_cache(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    local_cache = apps.site.storage.local_cache
    cache_pools = [p for p in cluster.pools if p.name in local_cache.pools]
    if not cache_pools:
        return
    names = ", ".join(p.name for p in cache_pools)
    lines = "\n".join(volume_group(apps.layout.name, cluster, p) for p in cache_pools)
    book.step(
        f"Local NVMe cache: volume group on the {names} hosts",
        f"""
TopoLVM carves cache volumes out of one LVM volume group per node, `{local_cache.volume_group}`. On every {names}
host, the script takes the NVMe drives of the size `config/hardware.yaml` gives and that hold nothing
(no partition, signature or holder: never the OS disk, whatever its device name), and refuses unless
it finds exactly the model's number of them:

```sh
{lines}
```
""",
    )
