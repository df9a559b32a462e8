"""A cluster's worker pools, pool by pool: the fabric's preparation where the pool has rails, then
the join with a bootstrap token of the pool's own."""

from __future__ import annotations

from pathlib import PurePosixPath

from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.control_plane import (
    KUBEADM_CONFIG,
    kubeadm_config,
    kubelet_patch,
    read_join_values,
    store_join_values,
)
from sitegen.model import ClusterLayout, PoolLayout, Site, paths
from sitegen.tree.runbook import Runbook

JOIN_TOKEN_TTL = "2h"  # per pool: a pool's hosts join in parallel, well within it


def checked_later(pool: PoolLayout, cluster: ClusterLayout) -> str:
    """The fabric preparation's pointer to the GPU Operator's topology check, for a pool with GPUs."""
    if pool.hardware.gpu is None:
        return ""
    return (
        f" The GPUs' place on the PCIe switches is checked once the GPU Operator's driver runs (step\n"
        f"`{GpuOperator.topology_title(pool)}`, after `{cluster.name}-{GpuOperator.name}` is Healthy): no "
        "driver exists before."
    )


def cordoned_at_join(pool: PoolLayout) -> str:
    """What the join step of a GPU pool adds: its nodes cordoned until their burn-in."""
    if pool.hardware.gpu is None:
        return ""
    return f"""
From the admin host, keep the pool's nodes from any work until their burn-in passes (step
`{GpuHealth.burn_in_title(pool)}`):

```sh
kubectl cordon {" ".join(h.name for h in pool.hosts)}
```
"""


def join_token(description: str) -> str:
    """A bootstrap token of its own, made on a control-plane node, for the joins of one pool or host."""
    return f"export KUBEADM_TOKEN=\"$(kubeadm token create --ttl {JOIN_TOKEN_TTL} --description '{description}')\""


def worker_join(
    site: Site, cluster: ClusterLayout, kdir: PurePosixPath, pool: PoolLayout, name: str, address: str
) -> str:
    """A worker's join, on the host, with the token and the CA's hash from the vault."""
    return f"""{read_join_values(site, cluster, "KUBEADM_TOKEN", "KUBEADM_CA_CERT_HASH")}
export NODE_NAME={name} NODE_IP={address}
{kubelet_patch(kdir, pool)}
{kubeadm_config(kdir / f"join-{pool.name}.yaml")}
kubeadm join --config {KUBEADM_CONFIG} && rm {KUBEADM_CONFIG}"""


def workers(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    kdir = paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))
    for pool in cluster.worker_pools:
        if pool.name in apps.site.fabric.nics:
            _fabric_preparation(book, apps, cluster, pool, kdir)
        _join(book, apps.site, cluster, pool, kdir)


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


def _join(book: Runbook, site: Site, cluster: ClusterLayout, pool: PoolLayout, kdir: PurePosixPath) -> None:
    first = cluster.control_plane.hosts[0]
    taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in pool.taints) or "none"
    book.step(
        f"Worker join: pool {pool.name} ({len(pool.hosts)} hosts)",
        f"""
A bootstrap token of the pool's own: the one of `kubeadm init` expires two hours after it, long
before the last of the site's joins. On {first.name}, into the vault for the pool's hosts:

```sh
{join_token(f"join pool {pool.name}")}
{store_join_values(site, cluster, "KUBEADM_TOKEN")}
```

On each host, with `NODE_NAME` and `NODE_IP` from the list in the file's header:

```sh
{worker_join(site, cluster, kdir, pool, "<host>", "<address>")}
```

The pool's taints ({taints}) are set
as the node registers.
{cordoned_at_join(pool)}""",
    )
