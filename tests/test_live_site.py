"""The tests' own guard: they read the fixture sites, never the live config/ and dist/, so a site owner's
change cannot turn `make test` red (the site checks judge it). Put-backs for the audit hook that
records such reads, and for the fixture tree the tests read instead of dist/."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

from sitegen.compose.fingerprint import fingerprint, recorded

from .conftest import REPO, seed_dist, seed_dist_path
from .live_site import LiveSiteReads

SMALL_SITE = REPO / "tests" / "fixtures" / "small-site"


def test_reads_of_the_guarded_folders_are_recorded_and_others_are_not(tmp_path, monkeypatch):
    live, elsewhere = tmp_path / "live", tmp_path / "fixture"
    for folder in (live / "config", elsewhere):
        folder.mkdir(parents=True)
        (folder / "pools.yaml").write_text("gpu: {}\n")
    reads = LiveSiteReads([live]).install()
    (elsewhere / "pools.yaml").read_text()
    os.listdir(elsewhere)
    assert reads.taken() == []

    (live / "config" / "pools.yaml").read_text()
    os.listdir(live / "config")
    shutil.copytree(live, tmp_path / "copy")
    monkeypatch.chdir(live)
    with open("config/pools.yaml") as relative:  # relative to the working folder, as `sitegen` reads
        relative.read()
    taken = reads.taken()
    assert str(live / "config" / "pools.yaml") in taken
    assert str(live / "config") in taken  # the listing
    assert taken.count(str(live / "config" / "pools.yaml")) == 3  # the read, the copy's, the relative
    assert reads.taken() == []


def test_removing_a_tree_under_the_working_folder_is_not_a_read_of_the_live_site(tmp_path, monkeypatch):
    """shutil.rmtree opens each folder relative to its parent's descriptor: a name like `config` there is
    not the working folder's config/."""
    reads = LiveSiteReads([tmp_path / "config"]).install()
    doomed = tmp_path / "elsewhere" / "config"
    doomed.mkdir(parents=True)
    (doomed / "pools.yaml").write_text("")
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(tmp_path / "elsewhere")
    assert reads.taken() == []


def test_the_fixture_tree_is_synthesized_when_the_live_dist_is_another_sites_then_linked(tmp_path):
    """The live dist/ of another site (here: none) makes one synth of the fixture; a live dist/ of the
    fixture's own inputs is linked, not copied and not read in place."""
    where = seed_dist_path(SMALL_SITE, tmp_path / "first")  # what conftest computes at import: no work
    assert not (tmp_path / "first").exists()
    synthesized = seed_dist(SMALL_SITE, tmp_path / "no-dist", tmp_path / "first")
    assert synthesized == where
    key = fingerprint(SMALL_SITE, None)
    assert synthesized == tmp_path / "first" / key / "dist"
    assert recorded(synthesized) == key
    assert seed_dist(SMALL_SITE, tmp_path / "no-dist", tmp_path / "first") == synthesized  # kept

    linked = seed_dist(SMALL_SITE, synthesized, tmp_path / "second")
    assert linked != synthesized and recorded(linked) == key
    inputs = (synthesized / "INPUTS").stat(), (linked / "INPUTS").stat()
    assert inputs[0].st_ino == inputs[1].st_ino
    files = sorted(p.relative_to(synthesized) for p in synthesized.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(linked) for p in linked.rglob("*") if p.is_file())


def _live_site_paths(source: Path) -> list[str]:
    """Where the module spells `REPO / "config"` or `REPO / "dist"`: a path a test could hand to a
    sitegen subprocess, whose reads the audit hook does not see."""
    found = []
    for node in ast.walk(ast.parse(source.read_text())):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.left, ast.Name)
            and node.left.id == "REPO"
            and isinstance(node.right, ast.Constant)
            and node.right.value in ("config", "dist")
        ):
            found.append(f"{source.name}:{node.lineno}")
    return found


def test_no_test_names_the_live_site_for_a_subprocess():
    """conftest names the live folders (to guard them and to link dist/ while it is the fixture's), and
    the adoption cases copy the repository; any other test takes CONFIG and DIST."""
    allowed = {"conftest.py", "test_adoption.py"}
    tests = Path(__file__).parent
    named = [
        hit
        for source in sorted(tests.rglob("*.py"))
        if source.name not in allowed
        for hit in _live_site_paths(source)
    ]
    assert named == []
    assert _live_site_paths(tests / "conftest.py")  # the check sees the spelling it refuses
