"""config/storage.yaml: PowerScale, the AIStor object store and the local NVMe cache."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt

from sitegen.model.erasure import default_parity, symmetric_set_sizes
from sitegen.model.fields import ConfigError, DnsLabel, DnsName, HttpsUrl, Strict
from sitegen.model.hardware import Hardware
from sitegen.model.maintenance import servers_down_tolerated, smallest_tolerant_pool
from sitegen.model.pools import Pool


class PowerScaleClass(Strict):
    path: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")]  # below base_path
    root_squash: bool = True
    reclaim: Literal["Retain", "Delete"] = "Retain"
    description: str


class PowerScale(Strict):
    model: str
    nodes: PositiveInt
    drives_per_node: PositiveInt
    drive_gb: PositiveInt
    cluster_name: DnsLabel
    endpoint: HttpsUrl
    smartconnect: DnsName
    access_zone: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")]
    base_path: Annotated[str, Field(pattern=r"^/ifs(/[A-Za-z0-9_.-]+)*$")]
    nfs_version: Literal["3", "4", "4.1", "4.2"]
    mount_pools: list[str] = Field(min_length=1)
    classes: dict[DnsLabel, PowerScaleClass] = Field(min_length=1)

    @property
    def raw_gb(self) -> int:
        return self.nodes * self.drives_per_node * self.drive_gb


class AIStorServerPool(Strict):
    """A server pool of the ObjectStore: its erasure sets never span pools, and its shape is fixed at
    its first start."""

    servers: PositiveInt


class BucketProtection(Strict):
    """Versioning keeps overwritten and deleted objects (as noncurrent versions); a lock (WORM,
    compliance mode, needs versioning) keeps every version `lock_days`, even from the root's delete:
    governance mode would let the root (or a key with BypassGovernanceRetention) erase them."""

    versioning: bool = True
    lock_days: Annotated[int, Field(ge=1)] | None = None


class AIStorTier(Strict):
    pool: str
    set_drive_count: Literal["auto"] | Annotated[int, Field(ge=2, le=32)] = "auto"
    parity: Literal["default"] | Annotated[int, Field(ge=0, le=16)] = "default"
    # drives of each set's parity that maintenance leaves for failures meanwhile (parity - 2 may go)
    maintenance_margin: Annotated[int, Field(ge=0, le=16)] = 2
    rdma: bool = False
    s3_hostname: DnsName
    # In the order they were added; together they take every host of `pool`. AIStor grows by adding a
    # pool, never by resizing one (synth refuses a change to a pool dist/ already holds).
    server_pools: list[AIStorServerPool] = Field(min_length=1)
    # Per bucket of the site's S3 consumers (its data class): versioning, object lock. Not listed: neither.
    bucket_protection: dict[str, BucketProtection] = {}

    @property
    def explicit_set_size(self) -> int | None:
        return self.set_drive_count if isinstance(self.set_drive_count, int) else None

    @property
    def explicit_parity(self) -> int | None:
        return self.parity if isinstance(self.parity, int) else None


class LocalCacheTier(Strict):
    pools: list[str] = Field(min_length=1)
    volume_group: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]{1,127}$")]


class Storage(Strict):
    powerscale: PowerScale
    aistor: AIStorTier
    local_cache: LocalCacheTier


def _parity(aistor: AIStorTier, per_server: int) -> int:
    """The ObjectStore's parity: configured, or the default of its first server pool's sets."""
    first = aistor.server_pools[0].servers
    sizes = symmetric_set_sizes(first, first * per_server)
    set_size = aistor.explicit_set_size or (max(sizes) if sizes else 2)
    return aistor.explicit_parity if aistor.explicit_parity is not None else default_parity(set_size)


def check_storage(storage: Storage, pools: dict[str, Pool], hardware: dict[str, Hardware]) -> None:
    aistor = storage.aistor
    if aistor.pool not in pools:
        raise ConfigError(("storage", "aistor", "pool"), f"unknown pool {aistor.pool!r}")
    hosts = pools[aistor.pool].count
    held = sum(p.servers for p in aistor.server_pools)
    per_server = hardware[pools[aistor.pool].hardware].nvme.drives
    parity = _parity(aistor, per_server)
    if held != hosts:
        change = "take hosts out by decommissioning a pool"
        if hosts > held:
            safe = smallest_tolerant_pool(hosts - held, per_server, aistor.explicit_set_size, parity)
            change = f"add a server pool of {hosts - held}"
            if safe is not None and safe != hosts - held:
                change = (
                    f"a pool of {hosts - held} would tolerate no server down: grow pool {aistor.pool!r} to "
                    f"{held + safe} hosts and add a server pool of {safe}"
                )
        raise ConfigError(
            ("storage", "aistor", "server_pools"),
            f"hold {held} servers, pool {aistor.pool!r} has {hosts} hosts: a live pool never changes size; {change}",
        )
    smallest = None
    for i, server_pool in enumerate(aistor.server_pools):
        servers, drives = server_pool.servers, per_server * server_pool.servers
        if aistor.set_drive_count == "auto" and not symmetric_set_sizes(servers, drives):
            raise ConfigError(
                ("storage", "aistor", "server_pools", i, "servers"),
                f"{servers} servers admit no symmetric erasure set of 2-16 drives: set set_drive_count",
            )
        if aistor.explicit_set_size is not None and drives % aistor.explicit_set_size:
            raise ConfigError(
                ("storage", "aistor", "set_drive_count"),
                f"pool {i}'s {drives} drives do not divide into sets of {aistor.explicit_set_size}",
            )
        set_size = aistor.explicit_set_size or max(symmetric_set_sizes(servers, drives))
        smallest = set_size if smallest is None else min(smallest, set_size)
        tolerated = servers_down_tolerated(servers, per_server, aistor.explicit_set_size, parity)
        safe = (
            None
            if tolerated
            else smallest_tolerant_pool(servers, per_server, aistor.explicit_set_size, parity)
        )
        if tolerated == 0 and safe is not None:  # EC:0, or a parity the sets refuse, is reported below
            raise ConfigError(
                ("storage", "aistor", "server_pools", i, "servers"),
                f"a pool of {servers} servers tolerates no server down (EC:{parity}, {per_server} drives each): "
                f"the smallest pool that tolerates one has {safe} servers",
            )
    assert smallest is not None
    if aistor.explicit_parity is not None and aistor.explicit_parity > smallest // 2:
        raise ConfigError(
            ("storage", "aistor", "parity"),
            f"EC:{aistor.explicit_parity} on sets of {smallest} drives: AIStor allows at most EC:{smallest // 2}",
        )
    for i, pool in enumerate(storage.local_cache.pools):
        if pool not in pools:
            raise ConfigError(("storage", "local_cache", "pools", i), f"unknown pool {pool!r}")
    mounts = storage.powerscale.mount_pools
    for i, pool in enumerate(mounts):
        if pool not in pools:
            raise ConfigError(("storage", "powerscale", "mount_pools", i), f"unknown pool {pool!r}")
    for name, pool in pools.items():
        if not pool.taints and name not in mounts:
            raise ConfigError(
                ("storage", "powerscale", "mount_pools"),
                f"untainted pool {name!r} gets the CSI node plugin anyway (it is placed by taint only): list it",
            )
