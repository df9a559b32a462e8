"""config/storage.yaml: PowerScale, the AIStor object store and the local NVMe cache."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt

from sitegen.model.erasure import symmetric_set_sizes
from sitegen.model.fields import ConfigError, DnsLabel, DnsName, HttpsUrl, Strict
from sitegen.model.hardware import Hardware
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


class AIStorTier(Strict):
    pool: str
    set_drive_count: Literal["auto"] | Annotated[int, Field(ge=2, le=32)] = "auto"
    parity: Literal["default"] | Annotated[int, Field(ge=0, le=16)] = "default"
    rdma: bool = False
    s3_hostname: DnsName

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


def check_storage(storage: Storage, pools: dict[str, Pool], hardware: dict[str, Hardware]) -> None:
    aistor = storage.aistor
    if aistor.pool not in pools:
        raise ConfigError(("storage", "aistor", "pool"), f"unknown pool {aistor.pool!r}")
    servers = pools[aistor.pool].count
    drives = hardware[pools[aistor.pool].hardware].nvme.drives * servers
    if aistor.set_drive_count == "auto" and not symmetric_set_sizes(servers, drives):
        raise ConfigError(
            ("storage", "aistor", "set_drive_count"),
            f"{servers} servers admit no symmetric erasure set of 2-16 drives: set it",
        )
    if aistor.explicit_set_size is not None and drives % aistor.explicit_set_size:
        raise ConfigError(
            ("storage", "aistor", "set_drive_count"),
            f"{drives} drives do not divide into sets of {aistor.explicit_set_size}",
        )
    set_size = aistor.explicit_set_size or max(symmetric_set_sizes(servers, drives))
    if aistor.explicit_parity is not None and aistor.explicit_parity > set_size // 2:
        raise ConfigError(
            ("storage", "aistor", "parity"),
            f"EC:{aistor.explicit_parity} on sets of {set_size} drives: AIStor allows at most EC:{set_size // 2}",
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
