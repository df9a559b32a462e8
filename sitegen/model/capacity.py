"""What nodes hold, computed once: the figures the plan, the picture, the tenants' quotas and Kueue's
queues share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import astuple, dataclass

from sitegen.model.hardware import Hardware


@dataclass(frozen=True)
class Capacity:
    nodes: int = 0
    cpu_cores: int = 0
    memory_gb: int = 0
    gpus: int = 0
    hbm_gb: int = 0

    @classmethod
    def of(cls, hardware: Hardware, nodes: int) -> Capacity:
        """`nodes` nodes of one hardware profile."""
        gpu = hardware.gpu
        gpus = nodes * gpu.count if gpu else 0
        return cls(
            nodes,
            nodes * hardware.cpu_cores,
            nodes * hardware.memory_gb,
            gpus,
            gpus * gpu.hbm_gb if gpu else 0,
        )

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


def total(capacities: Iterable[Capacity]) -> Capacity:
    return sum(capacities, Capacity())
