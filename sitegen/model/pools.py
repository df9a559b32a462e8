"""config/pools.yaml: node pools with the seed's labels, taints and hosts, and the checks on them."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from typing import Annotated, Literal

from pydantic import Discriminator, PositiveInt, PrivateAttr, Tag, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from sitegen.model.fields import Address, ConfigError, DnsLabel, LabelKey, LabelValue, Loc, Strict, dotted
from sitegen.model.hardware import Hardware
from sitegen.model.network import Network

ROLE_PREFIX = "node-role.kubernetes.io/"
CONTROL_PLANE_ROLE = "control-plane"
INFRA_ROLE = "infra"  # the pool that hosts cluster services; its cluster is the Argo CD hub


class Taint(Strict):
    key: LabelKey
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def toleration(self) -> dict[str, str]:
        if self.value is None:
            return {"key": self.key, "operator": "Exists", "effect": self.effect}
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


class Host(Strict):
    name: DnsLabel
    address: Address
    _entry: int = PrivateAttr(default=-1)  # its item in the pool's `hosts` list (a range makes many)
    _ranged: bool = PrivateAttr(default=False)

    @property
    def entry(self) -> int:
        return self._entry

    def field(self, name: str) -> str:
        """The config field that set this host's `name` or `address`."""
        return {"name": "names", "address": "first_address"}[name] if self._ranged else name


_NAMES = re.compile(r"^(?P<prefix>[a-z0-9-]*)\{(?P<first>\d+)\.\.(?P<last>\d+)\}(?P<suffix>[a-z0-9-]*)$")


class HostRange(Strict):
    """Hosts numbered in a range, as inventories write them: `names: "cmp{01..50}"` with the first
    number's digits as the width, `first_address` for the first number, and each next number `step`
    addresses on. A number in `skip` is left out; the others keep their addresses."""

    names: str
    first_address: Address
    step: PositiveInt = 1
    skip: list[int] = []

    @field_validator("names")
    @classmethod
    def _pattern(cls, names: str) -> str:
        match = _NAMES.match(names)
        if not match:
            raise ValueError(f"{names!r} is no name range like 'cmp{{01..50}}'")
        if int(match["last"]) < int(match["first"]):
            raise ValueError(f"{names!r} counts down")
        return names

    def expand(self) -> list[Host]:
        match = _NAMES.match(self.names)
        assert match is not None  # checked by the validator
        first, last, width = int(match["first"]), int(match["last"]), len(match["first"])
        unknown = sorted(set(self.skip) - set(range(first, last + 1)))
        if unknown:
            raise ValueError(f"skip lists {unknown[0]}, outside {first}..{last}")
        hosts = []
        for n in range(first, last + 1):
            if n in self.skip:
                continue
            offset = (n - first) * self.step
            if int(self.first_address) + offset > int(ipaddress.IPv4Address("255.255.255.255")):
                raise ValueError(f"{self.names} runs past the end of the address space")
            name = f"{match['prefix']}{n:0{width}d}{match['suffix']}"
            hosts.append(Host(name=name, address=str(self.first_address + offset)))
        return hosts


def _host_kind(value: object) -> str:
    return "range" if isinstance(value, dict) and "names" in value else "host"


# An entry is a range when it has `names`; its errors are then the range's alone. The tags are
# dropped from error locations (UNION_TAGS), so a field reads `compute.hosts[2].name`.
HostEntry = Annotated[
    Annotated[Host, Tag("host")] | Annotated[HostRange, Tag("range")], Discriminator(_host_kind)
]
UNION_TAGS = frozenset({"host", "range"})


class Pool(Strict):
    description: str
    hardware: str
    count: PositiveInt
    labels: dict[LabelKey, LabelValue]
    taints: list[Taint] = []
    # explicit hosts and ranges, mixed as needed; the model sees the hosts they expand to
    hosts: list[HostEntry]

    @field_validator("labels")
    @classmethod
    def _one_role(cls, labels: dict[str, str]) -> dict[str, str]:
        roles = sorted(k for k in labels if k.startswith(ROLE_PREFIX))
        if len(roles) != 1:
            raise ValueError(f"needs exactly one '{ROLE_PREFIX}<role>' label, found {roles or 'none'}")
        return labels

    @field_validator("hosts")
    @classmethod
    def _count_matches(cls, entries: list[Host | HostRange], info: ValidationInfo) -> list[Host]:
        hosts = []
        for i, entry in enumerate(entries):
            try:
                expanded = entry.expand() if isinstance(entry, HostRange) else [entry]
            except ValueError as err:
                raise PydanticCustomError("host_range", f"hosts[{i}]: {err}") from None
            for host in expanded:
                host._entry, host._ranged = i, isinstance(entry, HostRange)
            hosts += expanded
        count = info.data.get("count")
        if count is not None and len(hosts) != count:
            raise ValueError(f"{len(hosts)} hosts listed but count is {count}")
        return hosts

    @property
    def role(self) -> str:
        return next(k for k in self.labels if k.startswith(ROLE_PREFIX)).removeprefix(ROLE_PREFIX)

    @property
    def role_label(self) -> tuple[str, str]:
        key = ROLE_PREFIX + self.role
        return key, self.labels[key]


def check_pool_hardware(pools: dict[str, Pool], hardware: dict[str, Hardware]) -> None:
    for name, pool in pools.items():
        if pool.hardware not in hardware:
            raise ConfigError(
                ("pools", name, "hardware"),
                f"unknown hardware model {pool.hardware!r} (known: {', '.join(sorted(hardware))})",
            )
    roles = Counter(pool.role for pool in pools.values())
    for name, pool in pools.items():
        if roles[pool.role] > 1:
            raise ConfigError(
                ("pools", name, "labels"), f"role {pool.role!r} is claimed by more than one pool"
            )
    if roles[CONTROL_PLANE_ROLE] != 1:
        raise ConfigError(("pools",), f"exactly one pool must carry the role {CONTROL_PLANE_ROLE!r}")
    if roles[INFRA_ROLE] != 1:
        raise ConfigError(
            ("pools",), f"exactly one pool must carry the role {INFRA_ROLE!r} (cluster services)"
        )
    for name, pool in pools.items():
        if pool.role in (CONTROL_PLANE_ROLE, INFRA_ROLE) and not any(
            t.effect in ("NoSchedule", "NoExecute") for t in pool.taints
        ):
            raise ConfigError(
                ("pools", name, "taints"),
                "the system pools need a NoSchedule taint: platform components tolerate it, tenant "
                "pods (which may not, by their namespace's tolerationsWhitelist) never land beside them",
            )


def check_hosts(pools: dict[str, Pool], network: Network) -> None:
    hosts = sum(len(pool.hosts) for pool in pools.values())
    for name in ("bmc", "os"):
        cidr = getattr(network.management, name).cidr
        usable = cidr.num_addresses - 3  # network, broadcast and the gateway
        if hosts > usable:
            raise ConfigError(
                ("network", "management", name, "cidr"),
                f"{cidr} holds {usable} host addresses; the pools have {hosts} hosts, each on this plane",
            )
    plane = network.kubernetes.cidr
    names: dict[str, Loc] = {}
    addresses: dict[ipaddress.IPv4Address, Loc] = {}
    for pool_name, pool in pools.items():
        for host in pool.hosts:
            loc = ("pools", pool_name, "hosts", host.entry)
            if host.name in names:
                raise ConfigError(
                    (*loc, host.field("name")),
                    f"duplicate host {host.name!r} (also at {dotted(names[host.name])})",
                )
            names[host.name] = (*loc, host.field("name"))
            if host.address in addresses:
                raise ConfigError(
                    (*loc, host.field("address")),
                    f"duplicate address {host.address} (also at {dotted(addresses[host.address])})",
                )
            addresses[host.address] = (*loc, host.field("address"))
            if host.address not in plane:
                raise ConfigError(
                    (*loc, host.field("address")), f"{host.address} is outside the Kubernetes plane {plane}"
                )
