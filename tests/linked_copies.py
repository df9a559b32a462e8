"""Copies of the seed's dist/ made of hard links: a test's own tree in a fraction of the time a copy of
45 MB takes (dozens of tests break one), with the isolation of a copy.

- In this process, a write to a file of a copy first gives the copy a file of its own (an audit hook
  sees every open for writing: open(), io, pathlib and os.open), so the seed keeps its bytes.
- A subprocess is not seen: the CLI writes by renaming a new file into place, which never reaches the
  seed; git writes objects the same way. `changed_seed_files()` is the net for anything else: the seed's
  files compared with what they were when the process first looked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

_WRITES = os.O_WRONLY | os.O_RDWR


class LinkedCopies:
    def __init__(self, seed: Path) -> None:
        self._seed = seed
        self._roots: list[str] = []
        self._seed_stats: dict[Path, tuple[int, int, int]] | None = None

    def copy(self, source: Path, target: Path) -> Path:
        """`source` (the seed or a folder of it) copied to `target`, as links where the file system
        allows, else as bytes."""
        if self._seed_stats is None:
            self._seed_stats = self._stats()
        try:
            shutil.copytree(source, target, copy_function=os.link)
        except OSError:  # another file system, or no hard links
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
        else:
            self._roots.append(os.path.abspath(target) + os.sep)
        return target

    def release(self, target: Path) -> None:
        root = os.path.abspath(target) + os.sep
        self._roots = [r for r in self._roots if r != root]

    def changed_seed_files(self) -> list[str]:
        """Seed files whose bytes may have changed since the first copy (inode, size or mtime)."""
        if self._seed_stats is None:
            return []
        now = self._stats()
        return sorted(str(p.relative_to(self._seed)) for p, s in self._seed_stats.items() if now.get(p) != s)

    def __call__(self, event: str, args: tuple) -> None:
        if event != "open" or not self._roots or len(args) < 3 or not isinstance(args[2], int):
            return
        path, mode, flags = args[:3]
        if not flags & _WRITES or path is None or isinstance(path, int):
            return
        try:
            path = os.fsdecode(path)
        except TypeError:
            return
        if mode is None and not os.path.isabs(path):
            return  # os.open relative to a dir_fd: not a test's write
        path = os.path.abspath(path)
        if not any(path.startswith(root) for root in self._roots):
            return
        try:
            shared = os.stat(path).st_nlink > 1
        except OSError:
            return
        if shared:
            own = f"{path}.own-{os.getpid()}"
            shutil.copy2(path, own)
            os.replace(own, path)

    def _stats(self) -> dict[Path, tuple[int, int, int]]:
        stats = {}
        for folder, _, files in os.walk(self._seed):
            for name in files:
                path = Path(folder, name)
                s = path.stat()
                stats[path] = (s.st_ino, s.st_size, s.st_mtime_ns)
        return stats
