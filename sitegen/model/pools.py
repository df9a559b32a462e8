"""config/pools.yaml: node pools with the seed's labels, taints and hosts, and the checks on them."""

from __future__ import annotations

import ipaddress
from collections import Counter
from typing import Literal

from pydantic import PositiveInt, ValidationInfo, field_validator

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


class Pool(Strict):
    description: str
    hardware: str
    count: PositiveInt
    labels: dict[LabelKey, LabelValue]
    taints: list[Taint] = []
    hosts: list[Host]

    @field_validator("labels")
    @classmethod
    def _one_role(cls, labels: dict[str, str]) -> dict[str, str]:
        roles = sorted(k for k in labels if k.startswith(ROLE_PREFIX))
        if len(roles) != 1:
            raise ValueError(f"needs exactly one '{ROLE_PREFIX}<role>' label, found {roles or 'none'}")
        return labels

    @field_validator("hosts")
    @classmethod
    def _count_matches(cls, hosts: list[Host], info: ValidationInfo) -> list[Host]:
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


def check_hosts(pools: dict[str, Pool], network: Network) -> None:
    plane = network.kubernetes.cidr
    names: dict[str, Loc] = {}
    addresses: dict[ipaddress.IPv4Address, Loc] = {}
    for pool_name, pool in pools.items():
        for i, host in enumerate(pool.hosts):
            loc = ("pools", pool_name, "hosts", i)
            if host.name in names:
                raise ConfigError(
                    (*loc, "name"), f"duplicate host {host.name!r} (also at {dotted(names[host.name])})"
                )
            names[host.name] = (*loc, "name")
            if host.address in addresses:
                raise ConfigError(
                    (*loc, "address"),
                    f"duplicate address {host.address} (also at {dotted(addresses[host.address])})",
                )
            addresses[host.address] = (*loc, "address")
            if host.address not in plane:
                raise ConfigError(
                    (*loc, "address"), f"{host.address} is outside the Kubernetes plane {plane}"
                )
