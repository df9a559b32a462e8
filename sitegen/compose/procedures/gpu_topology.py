"""GPU topology: once the GPU Operator's driver runs, each GPU of a pool with rails is checked against
its rail's NIC (no driver exists before, so the fabric's preparation only announces the check)."""

from __future__ import annotations

from constructs.argocd import application_name
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.compose.apps import VariantApps
from sitegen.compose.fabric_hosts import DRIVER_ROOT
from sitegen.compose.procedures.book import Runbook
from sitegen.model import ClusterLayout, PoolLayout, paths


def _title(pool: PoolLayout) -> str:
    return f"GPU topology: pool {pool.name}"


def checked_later(pool: PoolLayout, cluster: ClusterLayout) -> str:
    """The fabric preparation's pointer to this check, for a pool with GPUs."""
    if pool.hardware.gpu is None:
        return ""
    return (
        f" The GPUs' place on the PCIe switches is checked once the GPU Operator's driver runs (step\n"
        f"`{_title(pool)}`, after `{cluster.name}-{GpuOperator.name}` is Healthy): no driver exists before."
    )


def gpu_topology(book: Runbook, apps: VariantApps) -> None:
    for cluster in apps.layout.clusters:
        for pool in cluster.worker_pools:
            if pool.name in apps.site.fabric.nics and pool.hardware.gpu is not None:
                _check(book, apps, cluster, pool)


def _check(book: Runbook, apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout) -> None:
    kdir = paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))
    book.step(
        _title(pool),
        f"""
on every host of pool {pool.name} (its driver runs there now),
check each GPU against its rail's NIC: on one PCIe switch (`nvidia-smi topo -m` from the driver's root,
`{DRIVER_ROOT}`). A host that fails: cordon it and fix it before it takes GPU jobs; its rails cross the CPU.

```sh
bash {kdir}/fabric-topology-{pool.name}.sh
```
""",
        after=application_name(cluster.name, GpuOperator.name),
    )
