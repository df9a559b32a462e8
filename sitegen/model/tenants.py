"""config/tenants.yaml: the site's users, each with a namespace and a GPU queue."""

from __future__ import annotations

from sitegen.model.fields import ConfigError, Strict


class Tenant(Strict):
    description: str
    nccl_benchmark: bool = False  # render the multi-node NCCL all-reduce benchmark job for this tenant


# Namespaces Kubernetes itself owns: a tenant there would relabel (and Argo CD would adopt) them.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def check_tenants(tenants: dict[str, Tenant]) -> None:
    for name in tenants:
        if name in SYSTEM_NAMESPACES or name.startswith("kube-"):
            raise ConfigError(
                ("tenants", name), f"{name!r} is a Kubernetes system namespace: choose another name"
            )
