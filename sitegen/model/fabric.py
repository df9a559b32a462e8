"""config/fabric.yaml: the NDR400 rails, and which NIC of which pool sits on which rail."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt

from sitegen.model.fields import Cidr, ConfigError, Loc, RailName, Strict, dotted
from sitegen.model.hardware import Hardware
from sitegen.model.pools import Pool


class Rail(Strict):
    cidr: Cidr


class Nic(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,15}$")]  # RDMA device, as NCCL_IB_HCA names it
    netdev: Annotated[str, Field(pattern=r"^[a-z0-9_.-]{1,15}$")]  # its IPoIB interface
    rail: RailName
    gpus: list[NonNegativeInt] = []


class Fabric(Strict):
    link_gbps: PositiveInt
    driver: Literal["inbox", "doca-container"] = "inbox"
    rails: dict[RailName, Rail] = Field(min_length=1)
    nics: dict[str, list[Nic]]

    def rails_of(self, pool: str) -> list[str]:
        """The rails a pool's NICs sit on, in rail order."""
        used = {nic.rail for nic in self.nics.get(pool, [])}
        return [rail for rail in self.rails if rail in used]


def check_fabric(fabric: Fabric, pools: dict[str, Pool], hardware: dict[str, Hardware]) -> None:
    for pool_name, nics in fabric.nics.items():
        loc: Loc = ("fabric", "nics", pool_name)
        if pool_name not in pools:
            raise ConfigError(loc, f"unknown pool {pool_name!r}")
        hw = hardware[pools[pool_name].hardware]
        if len(nics) != hw.ndr400_ports:
            raise ConfigError(
                loc, f"{len(nics)} NICs mapped but {pools[pool_name].hardware} has {hw.ndr400_ports}"
            )
        _check_nics(fabric, pool_name, nics, hw, loc)
    netdevs: dict[str, tuple[str, Loc]] = {}
    for pool_name, nics in fabric.nics.items():
        for i, nic in enumerate(nics):
            loc = ("fabric", "nics", pool_name, i, "netdev")
            seen = netdevs.setdefault(nic.rail, (nic.netdev, loc))
            if seen[0] != nic.netdev:
                raise ConfigError(
                    loc,
                    f"rail {nic.rail} is {seen[0]} at {dotted(seen[1])}; one rail needs one interface name "
                    "(it is the IPoIB master of the rail's network)",
                )
    for pool_name, pool in pools.items():
        if hardware[pool.hardware].ndr400_ports and pool_name not in fabric.nics:
            raise ConfigError(("fabric", "nics"), f"pool {pool_name} has NDR ports but no NIC-to-rail map")


def _check_nics(fabric: Fabric, pool_name: str, nics: list[Nic], hw: Hardware, loc: Loc) -> None:
    seen_gpu: dict[int, str] = {}
    seen_nic: set[str] = set()
    seen_rail: set[str] = set()
    for i, nic in enumerate(nics):
        if nic.rail in seen_rail:
            raise ConfigError(
                (*loc, i, "rail"), f"a second NIC on rail {nic.rail}: rail-optimised means one NIC per rail"
            )
        seen_rail.add(nic.rail)
        if nic.name in seen_nic:
            raise ConfigError((*loc, i, "name"), f"duplicate NIC {nic.name!r}")
        seen_nic.add(nic.name)
        if nic.rail not in fabric.rails:
            raise ConfigError(
                (*loc, i, "rail"),
                f"NIC {nic.name} is on undefined rail {nic.rail!r} (rails: {', '.join(fabric.rails)})",
            )
        if nic.gpus and hw.gpu is None:
            raise ConfigError((*loc, i, "gpus"), f"pool {pool_name} has no GPUs to map")
        for gpu in nic.gpus:
            if hw.gpu is not None and gpu >= hw.gpu.count:
                raise ConfigError(
                    (*loc, i, "gpus"), f"GPU {gpu} does not exist (the node has {hw.gpu.count})"
                )
            if gpu in seen_gpu:
                raise ConfigError(
                    (*loc, i, "gpus"), f"GPU {gpu} is mapped to two NICs ({seen_gpu[gpu]}, {nic.name})"
                )
            seen_gpu[gpu] = nic.name
    if hw.gpu is not None:
        unmapped = sorted(set(range(hw.gpu.count)) - set(seen_gpu))
        if unmapped:
            raise ConfigError(loc, f"GPUs {unmapped} are mapped to no NIC")
