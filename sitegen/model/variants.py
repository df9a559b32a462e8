"""config/variants.yaml: which pools form which cluster, in each variant of the site."""

from __future__ import annotations

from ipaddress import IPv4Address

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


# etcd beyond seven members only slows every write (each needs a majority); five is the usual.
MAX_ETCD_MEMBERS = 7


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
            _check_replaced_members(vname, cname, vc, clusters[cname], pools)
            _check_pod_addresses(vname, cname, vc, clusters[cname], pools)


def _check_pod_addresses(
    vname: str, cname: str, vc: VariantCluster, cluster: Cluster, pools: dict[str, Pool]
) -> None:
    nodes = sum(pools[p].count for p in vc.pools) + (len(vc.control_plane.hosts) if vc.control_plane else 0)
    blocks = 2 ** (cluster.pod_cidr_node_mask - cluster.pod_cidr.prefixlen)
    if nodes > blocks:
        raise ConfigError(
            ("clusters", cname, "pod_cidr"),
            f"{cluster.pod_cidr} holds {blocks} node blocks of /{cluster.pod_cidr_node_mask}; "
            f"variant {vname} puts {nodes} nodes in cluster {cname}",
        )


def _check_control_plane(loc: Loc, vc: VariantCluster, pools: dict[str, Pool]) -> None:
    has_cp_pool = any(pools[p].role == CONTROL_PLANE_ROLE for p in vc.pools)
    carve = vc.control_plane
    if has_cp_pool == (carve is not None):
        raise ConfigError(
            loc, "needs exactly one control plane: the control-plane pool or a `control_plane` carve-out"
        )
    if carve is None:
        cp = next(name for name in vc.pools if pools[name].role == CONTROL_PLANE_ROLE)
        _check_members(("pools", cp, "count"), pools[cp].count)
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
    _check_members((*cloc, "hosts"), len(carve.hosts))
    if len(carve.hosts) >= len(available):
        raise ConfigError((*cloc, "hosts"), f"would leave pool {carve.from_pool!r} empty")


def control_plane_hosts(vc: VariantCluster, pools: dict[str, Pool]) -> list[str]:
    if vc.control_plane is not None:
        return list(vc.control_plane.hosts)
    cp = next(name for name in vc.pools if pools[name].role == CONTROL_PLANE_ROLE)
    return [h.name for h in pools[cp].hosts]


def _check_replaced_members(
    vname: str, cname: str, vc: VariantCluster, cluster: Cluster, pools: dict[str, Pool]
) -> None:
    members = control_plane_hosts(vc, pools)
    taken: dict[str, str] = {}
    for old, new in cluster.replaced_members.items():
        loc: Loc = ("clusters", cname, "replaced_members", old)
        if old in members:
            raise ConfigError(loc, f"{old} is still a control-plane member of {cname} in variant {vname}")
        if new not in members:
            raise ConfigError(
                loc, f"{new} is no control-plane member of {cname} in variant {vname} ({', '.join(members)})"
            )
        if new in taken:
            raise ConfigError(loc, f"{new} already takes the place of {taken[new]}")
        taken[new] = old


def _check_members(loc: Loc, members: int) -> None:
    if members % 2 == 0:
        raise ConfigError(loc, f"{members} control-plane nodes: stacked etcd needs an odd member count")
    if members > MAX_ETCD_MEMBERS:
        raise ConfigError(
            loc, f"{members} control-plane nodes: etcd above {MAX_ETCD_MEMBERS} members only slows writes"
        )


def check_front_doors(
    variants: dict[str, Variant],
    clusters: dict[str, Cluster],
    pools: dict[str, Pool],
    aistor_pool: str,
    fixed: list[IPv4Address],
) -> None:
    """Where another cluster of a variant consumes AIStor, every storage host serves S3 on an address of
    its own at the top of its cluster's load-balancer range (constructs/s3_front_doors.py): the range
    must hold them above a general pool, and above the fixed addresses it holds (the gateway's)."""
    for vname, variant in variants.items():
        if len(variant.clusters) == 1:
            continue
        for cname, vc in variant.clusters.items():
            if aistor_pool not in vc.pools:
                continue
            cidr = clusters[cname].load_balancer_cidr
            usable = cidr.num_addresses - 2
            doors = pools[aistor_pool].count
            lowest_door = cidr.network_address + 1 + max(usable - doors, 0)
            under = [a for a in fixed if a in cidr and a >= lowest_door]
            if doors >= usable or under:
                clash = f", {under[0]} among them" if under else ""
                raise ConfigError(
                    ("clusters", cname, "load_balancer_cidr"),
                    f"{cidr} has {usable} addresses; variant {vname} takes its top {doors} for the S3 front "
                    f"doors of the {doors} {aistor_pool} hosts{clash}: widen it",
                )
