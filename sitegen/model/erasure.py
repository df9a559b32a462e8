"""AIStor erasure layout: set size, parity and usable capacity, as MinIO chooses them (arithmetic only).

MinIO takes set sizes 2-16 that divide the drive count and are symmetric over the hosts (the host
pattern is the last ellipsis of the server arguments), and picks the largest; parity defaults to EC:4
for sets of 8-16 drives. AIStor allows up to 32 drives per set when the size is set explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def erasure_layout(
    *, servers: int, drives_per_server: int, drive_gb: int, set_size: int | None, parity: int | None
) -> ErasureLayout:
    """The layout of a pool of servers; a set size or parity of None is MinIO's default."""
    drives = servers * drives_per_server
    size = set_size if set_size is not None else default_set_size(servers, drives)
    return ErasureLayout(
        set_size=size,
        parity=parity if parity is not None else default_parity(size),
        drives=drives,
        raw_gb=drives * drive_gb,
    )


def alternative_set_sizes(base: ErasureLayout) -> list[int]:
    """Set sizes worth comparing with the configured one: it, and 12, 16, 24, 32 where they divide."""
    return sorted(
        {base.set_size, *(s for s in (12, 16, 24, 32) if base.drives % s == 0 and s <= MAX_EXPLICIT_SET)}
    )
