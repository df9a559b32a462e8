"""A cluster's worker pools, pool by pool: the fabric's preparation where the pool has rails, then
the join with a bootstrap token of the pool's own."""

from __future__ import annotations

from pathlib import PurePosixPath

from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import Runbook
from sitegen.compose.procedures.burn_in import cordoned_at_join
from sitegen.compose.procedures.control_plane import kubelet_patch
from sitegen.compose.procedures.gpu_topology import checked_later
from sitegen.model import ClusterLayout, PoolLayout, paths

JOIN_TOKEN_TTL = "2h"  # per pool: a pool's hosts join in parallel, well within it


def workers(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    kdir = paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))
    for pool in cluster.worker_pools:
        if pool.name in apps.site.fabric.nics:
            _fabric_preparation(book, apps, cluster, pool, kdir)
        _join(book, cluster, pool, kdir)


def _fabric_preparation(
    book: Runbook, apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout, kdir: PurePosixPath
) -> None:
    rails = ", ".join(f"{n.name} -> {n.netdev} on rail {n.rail}" for n in apps.site.fabric.nics[pool.name])
    book.step(
        f"Fabric preparation: pool {pool.name}",
        f"""
Before these hosts join: name the IPoIB interfaces after the rail map ({rails}), load
`ib_ipoib` and `rdma_ucm` at boot, and lift containerd's locked-memory limit; then check the host
against the rail map from what the kernel shows (each RDMA device, its interface, the port ACTIVE,
which it is only once the subnet manager configured it). Join only hosts whose preflight passes: the
`rdma/rdma_rail_*` resources stay zero otherwise.{checked_later(pool, cluster)}

```sh
bash {kdir}/fabric-prep-{pool.name}.sh
bash {kdir}/fabric-preflight-{pool.name}.sh
```
""",
    )


def _join(book: Runbook, cluster: ClusterLayout, pool: PoolLayout, kdir: PurePosixPath) -> None:
    first = cluster.control_plane.hosts[0]
    taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in pool.taints) or "none"
    book.step(
        f"Worker join: pool {pool.name} ({len(pool.hosts)} hosts)",
        f"""
A bootstrap token of the pool's own: the one of `kubeadm init` expires two hours after it, long
before the last of the site's joins. On {first.name}, then hand `KUBEADM_TOKEN` to the pool's hosts:

```sh
export KUBEADM_TOKEN="$(kubeadm token create --ttl {JOIN_TOKEN_TTL} --description 'join pool {pool.name}')"
```

On each host, with `NODE_NAME` and `NODE_IP` from the list in the file's header:

```sh
export NODE_NAME=<host> NODE_IP=<address>
{kubelet_patch(kdir, pool)}
envsubst < {kdir}/join-{pool.name}.yaml > /tmp/kubeadm.yaml
kubeadm join --config /tmp/kubeadm.yaml
```

The pool's taints ({taints}) are set
as the node registers.
{cordoned_at_join(pool)}""",
    )
