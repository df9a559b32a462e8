"""config/variants.yaml: which pools form which cluster, in each variant of the site."""

from __future__ import annotations

from pydantic import Field

from sitegen.model.clusters import Cluster
from sitegen.model.fields import ConfigError, DnsLabel, Loc, Strict
from sitegen.model.pools import CONTROL_PLANE_ROLE, Pool


class CarvedControlPlane(Strict):
    from_pool: str
    hosts: list[DnsLabel] = Field(min_length=1)


class VariantCluster(Strict):
    pools: list[str] = Field(min_length=1)
    control_plane: CarvedControlPlane | None = None


class Variant(Strict):
    description: str
    clusters: dict[DnsLabel, VariantCluster] = Field(min_length=1)


def check_variants(
    variants: dict[str, Variant], clusters: dict[str, Cluster], pools: dict[str, Pool]
) -> None:
    for vname, variant in variants.items():
        owner: dict[str, str] = {}
        for cname, vc in variant.clusters.items():
            loc: Loc = ("variants", vname, "clusters", cname)
            if cname not in clusters:
                raise ConfigError(loc, f"unknown cluster {cname!r} (clusters.yaml has {', '.join(clusters)})")
            for i, pool in enumerate(vc.pools):
                if pool not in pools:
                    raise ConfigError((*loc, "pools", i), f"unknown pool {pool!r}")
                if pool in owner:
                    raise ConfigError(
                        (*loc, "pools", i), f"pool {pool!r} is already in cluster {owner[pool]!r}"
                    )
                owner[pool] = cname
        for pool in pools:
            if pool not in owner:
                raise ConfigError(("variants", vname), f"pool {pool!r} is in no cluster")
        for cname, vc in variant.clusters.items():
            _check_control_plane(("variants", vname, "clusters", cname), vc, pools)


def _check_control_plane(loc: Loc, vc: VariantCluster, pools: dict[str, Pool]) -> None:
    has_cp_pool = any(pools[p].role == CONTROL_PLANE_ROLE for p in vc.pools)
    carve = vc.control_plane
    if has_cp_pool == (carve is not None):
        raise ConfigError(
            loc, "needs exactly one control plane: the control-plane pool or a `control_plane` carve-out"
        )
    if carve is None:
        return
    cloc = (*loc, "control_plane")
    if carve.from_pool not in pools:
        raise ConfigError((*cloc, "from_pool"), f"unknown pool {carve.from_pool!r}")
    if pools[carve.from_pool].taints:
        raise ConfigError((*cloc, "from_pool"), f"pool {carve.from_pool!r} is tainted for a purpose")
    available = {h.name for h in pools[carve.from_pool].hosts}
    for i, host in enumerate(carve.hosts):
        if host not in available:
            raise ConfigError((*cloc, "hosts", i), f"host {host!r} is not in pool {carve.from_pool!r}")
    if len(set(carve.hosts)) != len(carve.hosts):
        raise ConfigError((*cloc, "hosts"), "lists a host twice")
    if len(carve.hosts) % 2 == 0:
        raise ConfigError(
            (*cloc, "hosts"), f"{len(carve.hosts)} hosts: stacked etcd needs an odd member count"
        )
    if len(carve.hosts) >= len(available):
        raise ConfigError((*cloc, "hosts"), f"would leave pool {carve.from_pool!r} empty")
