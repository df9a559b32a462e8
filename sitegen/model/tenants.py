"""config/tenants.yaml: the site's users, each with a namespace and a GPU queue."""

from __future__ import annotations

from pydantic import PositiveInt

from sitegen.model.fields import ConfigError, Strict


class TenantQuota(Strict):
    """What the namespace may hold at once (a ResourceQuota). Kueue shares the GPU pools between the
    tenants' queued jobs; the quota bounds everything else they create, Kueue or not. CPU, memory and
    GPUs left out are the capacity of the cluster's GPU pools (the queue's nominal quota)."""

    cpu: PositiveInt | None = None  # cores
    memory_gb: PositiveInt | None = None
    gpus: PositiveInt | None = None
    storage_gb: PositiveInt  # volume claims, all classes together
    volumes: PositiveInt  # volume claims


class Tenant(Strict):
    description: str
    nccl_benchmark: bool = False  # render the multi-node NCCL all-reduce benchmark job for this tenant
    quota: TenantQuota


# Namespaces Kubernetes itself owns: a tenant there would relabel (and Argo CD would adopt) them.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def check_tenants(tenants: dict[str, Tenant], capacity: dict[str, int]) -> None:
    """`capacity`: the GPU pools' cpu (cores), memory_gb and gpus, the most any quota can use."""
    for name, tenant in tenants.items():
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
