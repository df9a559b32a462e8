"""config/tenants.yaml: the site's users, each with a namespace and a GPU queue."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from sitegen.model.fields import ConfigError, DnsLabel, Strict


class TenantQuota(Strict):
    """What the namespace may hold at once (a ResourceQuota). Kueue shares the GPU pools between the
    tenants' queued jobs; the quota bounds everything else they create, Kueue or not. CPU, memory and
    GPUs left out are the capacity of the cluster's GPU pools (the queue's nominal quota)."""

    cpu: PositiveInt | None = None  # cores
    memory_gb: PositiveInt | None = None
    gpus: PositiveInt | None = None
    storage_gb: PositiveInt  # volume claims, all classes together
    volumes: PositiveInt  # volume claims


class TenantBucket(Strict):
    """A bucket of the tenant's in AIStor, `<tenant>-<name>`: a hard quota, and optionally versions
    (deleted and overwritten objects kept `keep_days`) or an expiry of every object (scratch)."""

    quota_tb: PositiveInt  # AIStor refuses writes beyond it (decimal TB)
    versioning: bool = False
    keep_days: PositiveInt = 7  # of the noncurrent versions, with versioning
    expire_days: PositiveInt | None = None  # every object, that many days after it was written


class Tenant(Strict):
    description: str
    nccl_benchmark: bool = False  # render the multi-node NCCL all-reduce benchmark job for this tenant
    # Its weight in Kueue's admission fair sharing: while tenants' jobs wait for the same GPUs, the
    # tenant whose recent GPU use (halving every week) divided by this weight is lowest goes first.
    fair_share: PositiveInt = 1
    # The highest Kueue priority its workloads may carry (the site's classes `low` and `high`, or
    # none: 0). A `low` tenant's queued workloads must carry `low`; a `high` one's may carry `high`,
    # going before (and within its ClusterQueue preempting) others' unlabelled work. Enforced at
    # admission in its namespace.
    priority: Literal["low", "normal", "high"] = "normal"
    # GPUs set aside for a group of tenants: those naming one cohort share a ClusterQueue
    # `gpu-<cohort>` whose nominal quota is their guaranteed_gpus together (in whole nodes), lent to
    # the other queues while idle and taken back by preempting what borrowed it; its tenants borrow
    # what the others leave idle. Without: the shared queue `gpu`, which keeps what cohorts leave.
    cohort: DnsLabel | None = None
    guaranteed_gpus: PositiveInt | None = None  # with a cohort
    quota: TenantQuota
    # datasets, checkpoints, model artifacts: buckets by name; one key of the tenant's reads and writes
    # them all (and nothing else), delivered into its namespace through the vault
    object_storage: dict[DnsLabel, TenantBucket] = Field(min_length=1)

    def buckets(self, tenant: str) -> dict[str, TenantBucket]:
        return {f"{tenant}-{name}": bucket for name, bucket in self.object_storage.items()}


# Namespaces Kubernetes itself owns: a tenant there would relabel (and Argo CD would adopt) them.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def cohort_gpus(tenants: dict[str, Tenant]) -> dict[str, int]:
    """GPUs each cohort's tenants set aside together, by cohort, sorted."""
    found: dict[str, int] = {}
    for tenant in tenants.values():
        if tenant.cohort is not None:
            found[tenant.cohort] = found.get(tenant.cohort, 0) + (tenant.guaranteed_gpus or 0)
    return dict(sorted(found.items()))


def cohort_nodes(tenants: dict[str, Tenant], pools: list[tuple[str, int, int]]) -> dict[str, dict[str, int]]:
    """The whole nodes each cohort's ClusterQueue holds, by cohort and GPU pool: its GPUs rounded up to
    whole nodes, taken from `pools` (name, nodes, GPUs per node) in order. A cohort that does not fit
    is a config error against its last tenant."""
    free = {name: nodes for name, nodes, _ in pools}
    shares: dict[str, dict[str, int]] = {}
    for cohort, gpus in cohort_gpus(tenants).items():
        taken: dict[str, int] = {}
        for name, _, per_node in pools:
            nodes = min(free[name], -(-gpus // per_node))
            if nodes:
                taken[name] = nodes
                free[name] -= nodes
                gpus -= nodes * per_node
            if gpus <= 0:
                break
        if gpus > 0:
            last = next(n for n in reversed(tenants) if tenants[n].cohort == cohort)
            raise ConfigError(
                ("tenants", last, "guaranteed_gpus"),
                f"cohort {cohort} needs {gpus} GPUs more than whole nodes of the GPU pools leave it",
            )
        shares[cohort] = taken
    return shares


def check_tenants(
    tenants: dict[str, Tenant],
    capacity: dict[str, int],
    gpu_pools: list[tuple[str, int, int]],
    aistor_usable_tb: float,
) -> None:
    """`capacity`: the GPU pools' cpu (cores), memory_gb and gpus, the most any quota can use;
    `gpu_pools`: (name, nodes, GPUs per node) of each, what the cohorts' ClusterQueues divide;
    `aistor_usable_tb`: what the tenants' buckets may hold together."""
    promised = sum(b.quota_tb for t in tenants.values() for b in t.object_storage.values())
    if promised > aistor_usable_tb:
        last = next(reversed(tenants))
        raise ConfigError(
            ("tenants", last, "object_storage"),
            f"the tenants' bucket quotas add up to {promised} TB; AIStor holds {aistor_usable_tb:.0f} TB usable",
        )
    for name, tenant in tenants.items():
        if (tenant.cohort is None) != (tenant.guaranteed_gpus is None):
            raise ConfigError(
                ("tenants", name, "guaranteed_gpus" if tenant.cohort else "cohort"),
                "a cohort sets GPUs aside for its tenants: give both cohort and guaranteed_gpus, or neither",
            )
        if tenant.guaranteed_gpus and tenant.quota.gpus and tenant.guaranteed_gpus > tenant.quota.gpus:
            raise ConfigError(
                ("tenants", name, "guaranteed_gpus"),
                f"{tenant.guaranteed_gpus} is more than its namespace's quota lets it use ({tenant.quota.gpus})",
            )
        for bucket in tenant.buckets(name):
            if len(bucket) > 63:
                raise ConfigError(("tenants", name, "object_storage"), f"bucket {bucket} is longer than 63")
        if name in SYSTEM_NAMESPACES or name.startswith("kube-"):
            raise ConfigError(
                ("tenants", name), f"{name!r} is a Kubernetes system namespace: choose another name"
            )
        for field in ("cpu", "memory_gb", "gpus"):
            asked = getattr(tenant.quota, field)
            if asked is not None and asked > capacity[field]:
                raise ConfigError(
                    ("tenants", name, "quota", field),
                    f"{asked} is more than the GPU pools hold ({capacity[field]}): a quota no queue can "
                    f"fill; leave it out for the whole pools",
                )
    cohort_nodes(tenants, gpu_pools)
