"""config/tenants.yaml: the site's users, each with a namespace and a GPU queue."""

from __future__ import annotations

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
    quota: TenantQuota
    # datasets, checkpoints, model artifacts: buckets by name; one key of the tenant's reads and writes
    # them all (and nothing else), delivered into its namespace through the vault
    object_storage: dict[DnsLabel, TenantBucket] = Field(min_length=1)

    def buckets(self, tenant: str) -> dict[str, TenantBucket]:
        return {f"{tenant}-{name}": bucket for name, bucket in self.object_storage.items()}


# Namespaces Kubernetes itself owns: a tenant there would relabel (and Argo CD would adopt) them.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def check_tenants(tenants: dict[str, Tenant], capacity: dict[str, int], aistor_usable_tb: float) -> None:
    """`capacity`: the GPU pools' cpu (cores), memory_gb and gpus, the most any quota can use;
    `aistor_usable_tb`: what the tenants' buckets may hold together."""
    promised = sum(b.quota_tb for t in tenants.values() for b in t.object_storage.values())
    if promised > aistor_usable_tb:
        last = next(reversed(tenants))
        raise ConfigError(
            ("tenants", last, "object_storage"),
            f"the tenants' bucket quotas add up to {promised} TB; AIStor holds {aistor_usable_tb:.0f} TB usable",
        )
    for name, tenant in tenants.items():
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
