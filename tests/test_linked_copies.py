"""The tests' copies of dist/ are hard links: a write to a copy must never reach the seed (whose files the
live dist/ shares), and a write the process cannot see must be reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .linked_copies import LinkedCopies


def _seed(root: Path) -> Path:
    seed = root / "seed"
    (seed / "apps").mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (seed / "apps" / f"{name}.yaml").write_text(f"kind: {name}\n")
    return seed


def test_writes_in_this_process_unshare_the_file_first(tmp_path):
    seed = _seed(tmp_path)
    copies = LinkedCopies(seed)
    sys.addaudithook(copies)  # inert once the copy is released
    copy = copies.copy(seed, tmp_path / "copy")
    try:
        assert (copy / "apps/a.yaml").stat().st_ino == (seed / "apps/a.yaml").stat().st_ino
        (copy / "apps/a.yaml").write_text("kind: changed\n")
        with open(copy / "apps/b.yaml", "r+") as file:
            file.write("kind: B")
        fd = os.open(copy / "apps/c.yaml", os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"more: 1\n")
        os.close(fd)
    finally:
        copies.release(copy)
    assert [(seed / "apps" / f"{n}.yaml").read_text() for n in "abcd"] == [f"kind: {n}\n" for n in "abcd"]
    assert (copy / "apps/a.yaml").read_text() == "kind: changed\n"
    assert (copy / "apps/b.yaml").read_text() == "kind: B\n"
    assert (copy / "apps/c.yaml").read_text() == "kind: c\nmore: 1\n"
    assert copies.changed_seed_files() == []
    assert (copy / "apps/d.yaml").stat().st_ino == (seed / "apps/d.yaml").stat().st_ino  # untouched: shared


def test_a_write_the_process_cannot_see_is_reported(tmp_path):
    seed = _seed(tmp_path)
    copies = LinkedCopies(seed)
    copy = copies.copy(seed, tmp_path / "copy")
    code = "import sys; open(sys.argv[1], 'r+').write('kind: X')"
    subprocess.run([sys.executable, "-c", code, str(copy / "apps/b.yaml")], check=True)
    assert copies.changed_seed_files() == ["apps/b.yaml"]


def test_the_tree_fixture_is_linked_and_private(tree, linked_copy):
    from .conftest import DIST

    rel = "one-cluster/bootstrap/RUNBOOK.md"
    before = (DIST / rel).read_bytes()
    assert (tree / rel).stat().st_ino == (DIST / rel).stat().st_ino
    (tree / rel).write_text("broken\n")
    assert (DIST / rel).read_bytes() == before
