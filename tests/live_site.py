"""The generator's tests must not read the live site (config/, dist/): a site owner's change would turn
them red, though only the site checks (`make site`) judge it. An audit hook records every file the test
process opens or lists under those folders; conftest fails the test that did.

What the hook does not see: the CLI run as a subprocess (conftest points its defaults at the fixtures
through SITEGEN_CONFIG and SITEGEN_DIST), and Node (jsii) reading files on its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

# The audit events that name a path the process reads (open covers io, pathlib and os.open).
_READS = frozenset({"open", "os.listdir", "os.scandir", "shutil.copytree"})


class LiveSiteReads:
    """Paths under `roots` the process read since the last `taken()`."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self._roots = tuple(os.path.abspath(root) for root in roots)
        self._reads: list[str] = []

    def __call__(self, event: str, args: tuple) -> None:
        if event not in _READS or not args or args[0] is None or isinstance(args[0], int):
            return
        try:
            path = os.fsdecode(args[0])
        except TypeError:  # not a path (a file object of shutil's)
            return
        if event == "open" and args[1] is None and not os.path.isabs(path):
            return  # os.open, maybe relative to a dir_fd (shutil.rmtree walks so), not to the cwd
        path = os.path.abspath(path)
        if any(path == root or path.startswith(root + os.sep) for root in self._roots):
            self._reads.append(path)

    def taken(self) -> list[str]:
        reads, self._reads = self._reads, []
        return reads

    def install(self) -> LiveSiteReads:
        sys.addaudithook(self)  # for the process's life: audit hooks cannot be removed
        return self
