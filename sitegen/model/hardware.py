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

    def kubelet_reserved(self) -> dict[str, str]:
        """What the kubelet keeps from pods for itself and the container runtime (kubeReserved).

        The tiers GKE sizes its nodes with: CPU 6 % of the first core, 1 % of the second, 0.5 % of the
        next two and 0.25 % above four; memory 25 % of the first 4 GiB, 20 % of the next 4, 10 % of
        the next 8, 6 % of the next 112 and 2 % above 128 GiB. Without it, pods requesting 1,800 of
        a GPU node's 2,000 GB leave the kubelet and runtime nothing before the OOM killer decides.
        """
        memory_mib = self.memory_gb * 10**9 // 2**20
        cpu_m = _tiers(self.cpu_cores * 1000, ((1000, 60), (1000, 10), (2000, 5), (None, 2.5)), per=1000)
        mem = _tiers(memory_mib, ((4096, 250), (4096, 200), (8192, 100), (114688, 60), (None, 20)), per=1000)
        return {"cpu": f"{cpu_m}m", "memory": f"{mem}Mi"}


def _tiers(amount: int, tiers: tuple[tuple[int | None, float], ...], per: int) -> int:
    """Sum of `rate / per` of each tier's share of `amount` (a tier of None takes the rest)."""
    total, left = 0.0, amount
    for size, rate in tiers:
        share = left if size is None else min(left, size)
        total += share * rate / per
        left -= share
        if left <= 0:
            break
    return round(total)
