"""`gpu-health`: the periodic NCCL all-reduce and DCGM diagnostics of the GPU pool (see
constructs/gpu_health.py), in a namespace of their own queued in Kueue at the lowest priority."""

from __future__ import annotations

from collections.abc import Iterable

from constructs import Construct
from constructs.argocd import application_name
from constructs.gpu_health import (
    CORDON_TOLERATION,
    PAIR,
    BurnIn,
    DcgmHealthCheck,
    NcclHealthCheck,
    burn_in_name,
    pair_name,
    pair_rounds,
)
from constructs.gpu_node_guard import CORDON_LABEL
from constructs.kueue import TenantQueue
from constructs.site_watches import HealthWatch, Watch
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT, gpu_job_tolerations
from sitegen.components.gpu.gpu_queues import GpuQueues, idle_work_queue
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.model import PoolLayout, Site
from sitegen.tree.runbook import JOBS_DONE_FUNCTION, jobs_done


class GpuHealth(RenderedComponent):
    name = "gpu-health"
    project = PROJECT
    layer = Layer.TENANTS
    namespace = "gpu-health"
    security = NamespaceSecurity("baseline", "GPU pods, none exempt (as the tenants')")
    queued = True
    skip_dry_run = True  # Kueue's LocalQueue
    images = {
        "nvidia-pytorch": "the NCCL all-reduce health check and burn-in pairs",
        "dcgm": "the DCGM diagnostics and burn-in",
    }
    after = (GpuQueues,)
    talks_to_api = False

    burn_in_seconds = 4 * 3600  # dcgmi diag at the burn-in level: about an hour, with room
    pair_seconds = 3600  # one NCCL all-reduce of a pair

    @staticmethod
    def burn_in_title(pool: PoolLayout) -> str:
        return f"GPU burn-in: pool {pool.name}"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        """A GPU node joins cordoned and takes work only once its burn-in passed (DCGM's long diagnostics
        on all its GPUs, then an all-reduce with each of its two ring neighbours, constructs/gpu_health.py);
        the same path for a node added or repaired."""
        part = f"GPU burn-in on `{scope.cluster.name}`"  # kubectl against this cluster
        after = application_name(scope.cluster.name, self.name)
        return [
            OperatorStep(Stage.ACCEPTANCE, self.burn_in_title(pool), self._burn_in(scope, pool), after, part)
            for pool in scope.gpu_pools
        ]

    def _burn_in(self, scope: ClusterScope, pool: PoolLayout) -> str:
        health = scope.site.services.health
        hosts = [h.name for h in pool.hosts]
        rounds = pair_rounds(hosts)
        pairs = [pair_name(*pair) for round_ in rounds for pair in round_]
        return f"""
burn in the pool's cordoned nodes, each pinned to its
node and tolerating only its cordon:

1. `dcgmi diag -r {health.burn_in_level}` (`services.health.burn_in_level`) on all GPUs of each node, about an hour;
2. an NCCL all-reduce of each node with the next one of the pool's ring, in rounds of pairs that
   share no node (pairs started together could each hold the other's second node and wait forever).
   Each node is measured twice, with the node before it and the one after; a pair's Job fails below
   the fabric's promised bus bandwidth ({health.nccl.min_fraction:.0%} of the
   nodes' NDR bandwidth, `services.health.nccl.min_fraction`).

```sh
{JOBS_DONE_FUNCTION}
{self._create(burn_in_name(h) for h in hosts)}
{jobs_done(self.namespace, self.burn_in_seconds, [burn_in_name(h) for h in hosts])}
{self._pair_rounds(rounds)}
for job in {" ".join(pairs)}; do echo "$job: $(kubectl -n {self.namespace} logs job/$job | grep 'bus bandwidth')"; done
kubectl uncordon {" ".join(hosts)}
```

The loop prints each node's two bandwidth figures: a node whose both pairs fall short is the slow one
(its neighbours each have a good pair). Uncordon only the nodes whose DCGM Job and at least one pair
completed; a node that failed stays cordoned: read `kubectl -n {self.namespace} logs job/<job>`, repair or
replace it, delete its Jobs and run them again. A GPU node that joins later, or comes back from a
repair, takes the same path: cordoned at its join, its DCGM Job, its two pairs (`{PAIR}-<before>-<host>` and
`{PAIR}-<host>-<after>`, one after the other, with neighbours in service: each waits until its
neighbour is free of work), then uncordon.

The GPU node guard (`gpu-node-guard`) cordons a GPU node by itself on a fatal Xid, a row-remap
failure or an NDR link down for two minutes, at most {health.auto_cordon_max_nodes}
nodes (`services.health.auto_cordon_max_nodes`), and labels it `{CORDON_LABEL}=<reason>`; the alert of
the same name says why. It never uncordons: after the repair the node takes the path above, then
`kubectl label node <host> {CORDON_LABEL}-` gives the guard its place back.
"""

    def _create(self, names: Iterable[str]) -> str:
        return "\n".join(f"kubectl -n {self.namespace} create job {n} --from=cronjob/{n}" for n in names)

    def _pair_rounds(self, rounds: list[list[tuple[str, str]]]) -> str:
        return "\n".join(
            f"{self._create(pair_name(*p) for p in round_)}\n"
            f"{jobs_done(self.namespace, self.pair_seconds, [pair_name(*p) for p in round_])}"
            for round_ in rounds
        )

    @staticmethod
    def expected_busbw_gbps(site: Site, pool: str) -> float:
        """A GPU node's NDR bandwidth in GB/s (rails x link): the bound of a multi-node all-reduce's bus
        bandwidth, whose bottleneck is the network between the nodes."""
        return len(site.fabric.rails_of(pool)) * site.fabric.link_gbps / 8

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [HealthWatch(self.namespace, scope.site.services.health.max_age_days)]

    def allowed_tolerations(self, ctx: ClusterContext) -> list[dict[str, str]]:
        # the burn-in runs on its node while the node is cordoned
        return [*gpu_job_tolerations(ctx), CORDON_TOLERATION]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        health = ctx.site.services.health
        pool = ctx.gpu_pools[0]
        TenantQueue(scope, "Queue", tenant=self.namespace, cluster_queue=idle_work_queue(ctx.site))
        NcclHealthCheck(
            scope,
            "Nccl",
            pool=pool,
            fabric=ctx.site.fabric,
            namespace=self.namespace,
            queue=self.namespace,
            image=ctx.image("nvidia-pytorch"),
            schedule=health.nccl.schedule,
            nodes=min(health.nccl.nodes, len(pool.hosts)),
            min_busbw_gbps=GpuHealth.expected_busbw_gbps(ctx.site, pool.name) * health.nccl.min_fraction,
        )
        DcgmHealthCheck(
            scope,
            "Dcgm",
            pool=pool,
            fabric=ctx.site.fabric,
            namespace=self.namespace,
            queue=self.namespace,
            image=ctx.image("dcgm"),
            schedule=health.dcgm.schedule,
            level=health.dcgm.level,
        )
        for gpu_pool in ctx.gpu_pools:
            BurnIn(
                scope, f"BurnIn-{gpu_pool.name}", pool=gpu_pool, fabric=ctx.site.fabric,
                namespace=self.namespace, dcgm_image=ctx.image("dcgm"), nccl_image=ctx.image("nvidia-pytorch"),
                level=health.burn_in_level, queue=self.namespace,
                min_busbw_gbps=GpuHealth.expected_busbw_gbps(ctx.site, gpu_pool.name) * health.nccl.min_fraction,
            )  # fmt: skip
