"""GPU burn-in: a GPU node joins cordoned and takes work only once its burn-in passed (DCGM's long
diagnostics on all its GPUs, constructs/gpu_health.py); the same path for a node added or repaired."""

from __future__ import annotations

from constructs.gpu_health import burn_in_name
from sitegen.components.gpu.gpu_health import NAMESPACE, GpuHealth
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import Runbook
from sitegen.model import ClusterLayout, PoolLayout


def title(pool: PoolLayout) -> str:
    return f"GPU burn-in: pool {pool.name}"


def cordoned_at_join(pool: PoolLayout) -> str:
    """What the join step of a GPU pool adds: its nodes cordoned until their burn-in."""
    if pool.hardware.gpu is None:
        return ""
    return f"""
From the admin host, keep the pool's nodes from any work until their burn-in passes (step
`{title(pool)}`):

```sh
kubectl cordon {" ".join(h.name for h in pool.hosts)}
```
"""


def burn_in(book: Runbook, apps: VariantApps) -> None:
    for cluster in apps.layout.clusters:
        if not any(c.name == GpuHealth.name for c in apps.context(cluster).components):
            continue
        book.part(f"GPU burn-in on `{cluster.name}`")  # kubectl against this cluster
        for pool in cluster.worker_pools:
            if pool.hardware.gpu is not None:
                _step(book, apps, cluster, pool)


def _step(book: Runbook, apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout) -> None:
    hosts = [h.name for h in pool.hosts]
    level = apps.site.services.health.burn_in_level
    create = "\n".join(
        f"kubectl -n {NAMESPACE} create job {burn_in_name(h)} --from=cronjob/{burn_in_name(h)}" for h in hosts
    )
    jobs = " ".join(f"job/{burn_in_name(h)}" for h in hosts)
    book.step(
        title(pool),
        f"""
Once `{cluster.name}-{GpuHealth.name}` is Healthy, burn in the pool's cordoned nodes: `dcgmi diag -r {level}`
(`services.health.burn_in_level`) on all GPUs of each node, pinned to it, about an hour. Uncordon the
nodes whose Job completed; a node whose Job failed stays cordoned: read `kubectl -n {NAMESPACE} logs
job/{burn_in_name("<host>")}`, repair or replace it, delete the Job and run it again. A GPU node that
joins later, or comes back from a repair, takes the same path: cordoned at its join, its burn-in, then
uncordon.

```sh
{create}
kubectl -n {NAMESPACE} wait --for=condition=complete --timeout=4h {jobs}
kubectl uncordon {" ".join(hosts)}
```
""",
    )
