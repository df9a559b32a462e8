"""The git-ignored cache (`.cache/`, or $SITEGEN_CACHE): chart renders, parsed YAML files and checks'
results, each stored under an area by the digest of what it is a pure function of."""

from __future__ import annotations

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
    try:
        return marshal.loads((cache_dir() / area / f"{key}.marshal").read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None


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
