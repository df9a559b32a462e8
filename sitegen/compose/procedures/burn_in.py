"""GPU burn-in: a GPU node joins cordoned and takes work only once its burn-in passed (DCGM's long
diagnostics on all its GPUs, then an all-reduce with each of its two ring neighbours,
constructs/gpu_health.py); the same path for a node added or repaired."""

from __future__ import annotations

from collections.abc import Iterable

from constructs.argocd import application_name
from constructs.gpu_health import PAIR, burn_in_name, pair_name, pair_rounds
from constructs.gpu_node_guard import CORDON_LABEL
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import JOBS_DONE_FUNCTION, Runbook, jobs_done
from sitegen.model import ClusterLayout, PoolLayout

BURN_IN_SECONDS = 4 * 3600  # dcgmi diag at the burn-in level: about an hour, with room
PAIR_SECONDS = 3600  # one NCCL all-reduce of a pair


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
        if not apps.context(cluster).has(GpuHealth):
            continue
        book.part(f"GPU burn-in on `{cluster.name}`")  # kubectl against this cluster
        for pool in cluster.worker_pools:
            if pool.hardware.gpu is not None:
                _step(book, apps, cluster, pool)


def _step(book: Runbook, apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout) -> None:
    hosts = [h.name for h in pool.hosts]
    level = apps.site.services.health.burn_in_level
    rounds = pair_rounds(hosts)
    pairs = [pair_name(*pair) for round_ in rounds for pair in round_]
    book.step(
        title(pool),
        f"""
burn in the pool's cordoned nodes, each pinned to its
node and tolerating only its cordon:

1. `dcgmi diag -r {level}` (`services.health.burn_in_level`) on all GPUs of each node, about an hour;
2. an NCCL all-reduce of each node with the next one of the pool's ring, in rounds of pairs that
   share no node (pairs started together could each hold the other's second node and wait forever).
   Each node is measured twice, with the node before it and the one after; a pair's Job fails below
   the fabric's promised bus bandwidth ({apps.site.services.health.nccl.min_fraction:.0%} of the
   nodes' NDR bandwidth, `services.health.nccl.min_fraction`).

```sh
{JOBS_DONE_FUNCTION}
{_create(burn_in_name(h) for h in hosts)}
{jobs_done(GpuHealth.namespace, BURN_IN_SECONDS, [burn_in_name(h) for h in hosts])}
{_pair_rounds(rounds)}
for job in {" ".join(pairs)}; do echo "$job: $(kubectl -n {GpuHealth.namespace} logs job/$job | grep 'bus bandwidth')"; done
kubectl uncordon {" ".join(hosts)}
```

The loop prints each node's two bandwidth figures: a node whose both pairs fall short is the slow one
(its neighbours each have a good pair). Uncordon only the nodes whose DCGM Job and at least one pair
completed; a node that failed stays cordoned: read `kubectl -n {GpuHealth.namespace} logs job/<job>`, repair or
replace it, delete its Jobs and run them again. A GPU node that joins later, or comes back from a
repair, takes the same path: cordoned at its join, its DCGM Job, its two pairs (`{PAIR}-<before>-<host>` and
`{PAIR}-<host>-<after>`, one after the other, with neighbours in service: each waits until its
neighbour is free of work), then uncordon.

The GPU node guard (`gpu-node-guard`) cordons a GPU node by itself on a fatal Xid, a row-remap
failure or an NDR link down for two minutes, at most {apps.site.services.health.auto_cordon_max_nodes}
nodes (`services.health.auto_cordon_max_nodes`), and labels it `{CORDON_LABEL}=<reason>`; the alert of
the same name says why. It never uncordons: after the repair the node takes the path above, then
`kubectl label node <host> {CORDON_LABEL}-` gives the guard its place back.
""",
        after=application_name(cluster.name, GpuHealth.name),
    )


def _create(names: Iterable[str]) -> str:
    return "\n".join(f"kubectl -n {GpuHealth.namespace} create job {n} --from=cronjob/{n}" for n in names)


def _pair_rounds(rounds: list[list[tuple[str, str]]]) -> str:
    return "\n".join(
        f"{_create(pair_name(*p) for p in round_)}\n"
        f"{jobs_done(GpuHealth.namespace, PAIR_SECONDS, [pair_name(*p) for p in round_])}"
        for round_ in rounds
    )
