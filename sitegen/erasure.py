"""AIStor erasure layout: set size, parity and usable capacity, as MinIO chooses them.

MinIO takes set sizes 2-16 that divide the drive count and are symmetric over the hosts (the host
pattern is the last ellipsis of the server arguments), and picks the largest; parity defaults to EC:4
for sets of 8-16 drives. AIStor allows up to 32 drives per set when the size is set explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from sitegen.model import Site

MAX_DEFAULT_SET = 16
MAX_EXPLICIT_SET = 32


@dataclass(frozen=True)
class ErasureLayout:
    set_size: int
    parity: int
    drives: int
    raw_gb: int

    @property
    def sets(self) -> int:
        return self.drives // self.set_size

    @property
    def usable_gb(self) -> int:
        return self.raw_gb * (self.set_size - self.parity) // self.set_size

    @property
    def efficiency(self) -> float:
        return (self.set_size - self.parity) / self.set_size


def symmetric_set_sizes(hosts: int, drives: int) -> list[int]:
    return [
        s for s in range(2, MAX_DEFAULT_SET + 1) if drives % s == 0 and (hosts % s == 0 or s % hosts == 0)
    ]


def default_set_size(hosts: int, drives: int) -> int:
    return max(symmetric_set_sizes(hosts, drives))


def default_parity(set_size: int) -> int:
    return (
        next(p for limit, p in ((1, 0), (3, 1), (5, 2), (7, 3)) if set_size <= limit) if set_size < 8 else 4
    )


def aistor_layout(site: Site, set_size: int | None = None, parity: int | None = None) -> ErasureLayout:
    """The configured layout, or the one given (for the table of alternatives)."""
    tier = site.storage.aistor
    pool = site.pools[tier.pool]
    nvme = site.hardware_of(tier.pool).nvme
    drives = pool.count * nvme.drives
    if set_size is None:
        set_size = (
            tier.set_drive_count
            if isinstance(tier.set_drive_count, int)
            else default_set_size(pool.count, drives)
        )
    if parity is None:
        parity = tier.parity if isinstance(tier.parity, int) else default_parity(set_size)
    return ErasureLayout(set_size=set_size, parity=parity, drives=drives, raw_gb=drives * nvme.drive_gb)


def alternatives(site: Site) -> list[ErasureLayout]:
    """Set sizes that divide the drives (default, 12, 16, 24, 32 where possible) at EC:2 to EC:4."""
    base = aistor_layout(site)
    sizes = sorted(
        {base.set_size, *(s for s in (12, 16, 24, 32) if base.drives % s == 0 and s <= MAX_EXPLICIT_SET)}
    )
    return [aistor_layout(site, size, parity) for size in sizes for parity in (2, 3, 4)]
