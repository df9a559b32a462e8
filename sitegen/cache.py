"""The git-ignored cache (`.cache/`, or $SITEGEN_CACHE): chart renders, parsed YAML files and checks'
results, each stored under an area by the digest of what it is a pure function of.

Every change of config, values or code makes new entries and none goes stale by itself (the tests alone
add hundreds of megabytes a day), so each area has a budget: `prune` drops its least recently used
entries, oldest first, once it is over (a hit refreshes an entry's time).
"""

from __future__ import annotations

import contextlib
import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

PROJECT = Path(__file__).resolve().parents[1]  # the repository (the checkout the generator runs from)


def cache_dir() -> Path:
    return Path(os.environ.get("SITEGEN_CACHE") or PROJECT / ".cache")


def stored(area: str, key: str, compute: Callable[[], T]) -> T:
    """`compute()`, kept in the git-ignored cache under `area/key` for the next process. For results
    that are costly and a pure function of what `key` digests."""
    found = read_stored(area, key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    value = compute()
    keep(area, key, value)
    return value


def read_stored(area: str, key: str) -> Any:
    """What `keep` stored under `area/key`, or None."""
    path = cache_dir() / area / f"{key}.marshal"
    try:
        value = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    used(path)
    return value


def used(path: Path) -> None:
    """Mark a cache entry as just used, so that `prune` keeps it longest."""
    with contextlib.suppress(OSError):
        os.utime(path)


MB = 1 << 20
BUDGETS = {  # an area's size at most; each holds several sites' worth (the seed's renders: 50 MB)
    "renders": 512 * MB,
    "parsed": 256 * MB,
    "chart-keys": 64 * MB,
    "schema-problems": 64 * MB,
    "synth": 16 * MB,  # a record of what a synth wrote: the last ones of each output folder matter
}


def prune(budgets: dict[str, int] = BUDGETS) -> None:
    """Bring every area over its budget down to three quarters of it (not pruned again on every run),
    least recently used entries first. An entry another process is writing (`.tmp`) stays; a reader that
    finds an entry gone computes it again."""
    for area, budget in budgets.items():
        try:
            with os.scandir(cache_dir() / area) as found:
                entries = [
                    (stat.st_mtime_ns, stat.st_size, entry.path)
                    for entry in found
                    if not entry.name.endswith(".tmp") and entry.is_file() and (stat := entry.stat())
                ]
        except OSError:
            continue
        total = sum(size for _, size, _ in entries)
        if total <= budget:
            continue
        for _, size, path in sorted(entries):
            if total <= budget * 3 // 4:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
            total -= size


def keep(area: str, key: str, value: Any) -> None:
    """Store plain values (marshal) under `area/key`, replacing what was there in one step; anything
    marshal cannot write is not kept."""
    try:
        data = marshal.dumps(value)
    except ValueError:
        return
    path = cache_dir() / area / f"{key}.marshal"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
