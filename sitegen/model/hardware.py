"""config/hardware.yaml: the server models the pools are built from."""

from __future__ import annotations

from pydantic import NonNegativeInt, PositiveInt

from sitegen.model.fields import DnsLabel, Strict


class Nvme(Strict):
    drives: PositiveInt
    drive_gb: PositiveInt
    generation: str | None = None

    @property
    def total_gb(self) -> int:
        return self.drives * self.drive_gb


class Gpu(Strict):
    model: DnsLabel
    count: PositiveInt
    hbm_gb: PositiveInt


class Hardware(Strict):
    vendor: str
    model: str
    cpu_cores: PositiveInt
    memory_gb: PositiveInt
    nvme: Nvme
    ethernet_100g_ports: PositiveInt
    ndr400_ports: NonNegativeInt = 0
    gpu: Gpu | None = None
