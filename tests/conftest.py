"""Shared fixtures: the seed site (a fixture, never the live config/), its synthesized tree, editable
copies of it, and the CLI as a subprocess.

The generator's tests run on committed fixture sites, so they pass whatever config/ holds: a site
owner's change is checked by the site checks (`make site`), not by tests that know the seed's figures.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

import sitegen  # noqa: F401  (selects the project's Node for jsii before cdk8s loads)
from sitegen.cache import cache_dir
from sitegen.model import Site, load_site

from .linked_copies import LinkedCopies
from .live_site import LiveSiteReads

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "tests" / "fixtures" / "seed-site"  # the seed's config/, copied: the default fixture site
SITEGEN = Path(sys.executable).parent / "sitegen"


def seed_dist_path(config: Path, root: Path) -> Path:
    """Where `seed_dist` keeps the tree of `config`: by the fingerprint of its inputs."""
    from sitegen.compose.fingerprint import fingerprint

    return root / fingerprint(config, None) / "dist"  # dist/: the RUNBOOK names files dist/<variant>/...


def seed_dist(config: Path, live: Path, root: Path) -> Path:
    """The tree `config` synthesizes, under `root` (shared by the test workers, kept until the code or
    the fixture changes): the live dist/'s files linked while config/ is the fixture's (the same
    fingerprint, so the committed bytes are what the tests read), else one synth of the fixture. Never
    the live folder itself: a test that reads it by its path is caught (live_site.py)."""
    from sitegen.compose.fingerprint import recorded

    target = seed_dist_path(config, root)
    key = target.parent.name
    root.mkdir(parents=True, exist_ok=True)
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker makes it, the others wait for its tree
        if recorded(target) == key:
            return target
        for stale in root.iterdir():
            if stale.is_dir():
                shutil.rmtree(stale)
        staging = root / f".{key}" / "dist"
        if recorded(live) == key:
            try:  # synth never rewrites a file in place: a link keeps the bytes it was made with
                shutil.copytree(live, staging, copy_function=os.link)
            except OSError:  # another file system, or no hard links
                shutil.rmtree(staging, ignore_errors=True)
                shutil.copytree(live, staging)
        else:
            result = subprocess.run(
                [str(SITEGEN), "synth", "--config", str(config), "--out", str(staging)],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"synth of the fixture {config} failed:\n{result.stderr}")
        staging.parent.rename(target.parent)
    return target


# The fixture's pins, for a test module's parameters (built at import; a test takes `site.versions`)
PINS = yaml.safe_load((CONFIG / "versions.yaml").read_text())


def _seed_root() -> Path:
    """Where the fixture trees live: on the file system of the tests' temporary folders, so that their
    copies are links. The cache, unless TMPDIR is elsewhere (make test puts it on /dev/shm): then
    there, named by this checkout (another checkout's tests keep theirs)."""
    temporary, cache = Path(tempfile.gettempdir()), cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if temporary.stat().st_dev == cache.stat().st_dev:
        return cache / "seed-dist"
    return temporary / f"sitegen-seed-dist-{hashlib.blake2b(str(REPO).encode(), digest_size=4).hexdigest()}"


# The fixture site's tree: its place is known at import, `_fixture_site` makes it before the first test.
DIST = seed_dist_path(CONFIG, _seed_root())
LIVE_SITE = (REPO / "config", REPO / "dist")
live_site_reads = LiveSiteReads(LIVE_SITE).install()
linked_copies = LinkedCopies(DIST)
sys.addaudithook(linked_copies)  # a write in this process to a linked copy unshares the file first


def _refuse_live_site_reads(reads: list[str], where: str) -> None:
    if reads:
        shown = ", ".join(sorted({str(Path(r).relative_to(REPO)) for r in reads})[:3])
        pytest.fail(
            f"{where} read the live site ({shown}): the generator's tests read their fixtures "
            "(conftest's CONFIG and DIST), so that a site owner's change to config/ cannot turn them red",
            pytrace=False,
        )


_read_at_collection: list[str] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    _read_at_collection.extend(live_site_reads.taken())  # a module's import: every test reports it


@pytest.fixture(scope="session", autouse=True)
def _fixture_site() -> Iterator[None]:
    """The fixture site's tree made (or found), and every command a test runs without --config or
    --dist pointed at the fixture, never the live site. Linking the live dist/'s files is the one read
    of it a test session makes."""
    made = seed_dist(CONFIG, REPO / "dist", DIST.parent.parent)
    assert made == DIST, (made, DIST)
    live_site_reads.taken()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SITEGEN_CONFIG", str(CONFIG))
        env.setenv("SITEGEN_DIST", str(DIST))
        yield


@pytest.fixture(autouse=True)
def _reads_only_fixtures(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that read config/ or dist/ of the repository (an adoption case works on a copy of
    the repository, and copies it from there). A fixture's reads count for the test that set it up."""
    _refuse_live_site_reads(_read_at_collection, "collecting the tests")
    yield
    reads = live_site_reads.taken()
    if request.node.get_closest_marker("adoption") is None:
        _refuse_live_site_reads(reads, request.node.nodeid)


@pytest.fixture(scope="session")
def site() -> Site:
    return load_site(CONFIG)


@pytest.fixture(scope="session")
def docs():
    """The committed dist/ read back as documents (bodies are shared: read only)."""
    from sitegen.tree.documents import load_tree

    return load_tree(DIST)


@pytest.fixture
def config_copy(tmp_path: Path) -> Path:
    """A private copy of config/ that a test may break."""
    target = tmp_path / "config"
    shutil.copytree(CONFIG, target)
    return target


def edit_yaml(config_dir: Path, file: str, change: Callable[[Any], Any]) -> None:
    """Load config_dir/file, let `change` mutate it (or return a replacement), write it back."""
    path = config_dir / file
    data = yaml.safe_load(path.read_text())
    result = change(data)
    path.write_text(yaml.safe_dump(data if result is None else result, sort_keys=False))


def run_sitegen(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SITEGEN), *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False
    )


def invoke_sitegen(*args: str | Path) -> Result:
    """The CLI in-process: as strict as the subprocess (a traceback shows up as `result.exception`)."""
    from sitegen.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def validate(tree: Path):
    return invoke_sitegen("validate", "--dist", tree)


def edit_documents(tree: Path, rel: str, change: Callable[[dict[str, Any]], Any]) -> None:
    """Let `change` mutate each document of a file of a dist/ copy (`rel` from its root), write them back."""
    path = tree / rel
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        change(doc)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def findings(tree: Path) -> list[str]:
    """The lines of a validate that must find something (exit 1)."""
    result = validate(tree)
    assert result.exit_code == 1, result.stdout
    return result.stdout.splitlines()


@pytest.fixture
def linked_copy() -> Iterator[Callable[[Path, Path], Path]]:
    """Copies the seed's dist/ (or a folder of it) as hard links that a write unshares (linked_copies.py);
    fails the test whose run changed the seed's bytes, which the live dist/ shares."""
    made: list[Path] = []

    def copy(source: Path, target: Path) -> Path:
        made.append(target)
        return linked_copies.copy(source, target)

    yield copy
    for target in made:
        linked_copies.release(target)
    if changed := linked_copies.changed_seed_files():
        (DIST / "INPUTS").unlink(missing_ok=True)  # the next session makes the seed tree again
        pytest.fail(
            f"the test changed the seed's {', '.join(changed[:3])} in place (a write this process did not "
            "make, or a subprocess's): the live dist/ shares those bytes, `git checkout dist/` restores it",
            pytrace=False,
        )


@pytest.fixture
def tree(tmp_path: Path, request: pytest.FixtureRequest, linked_copy) -> Path:
    """A copy of the seed's dist/ to break. A module marked `tree_variants(...)` gets those variants
    only: validate then reads a half of the documents."""
    target = tmp_path / "dist"
    marker = request.node.get_closest_marker("tree_variants")
    if marker is None:
        linked_copy(DIST, target)
    else:
        for variant in marker.args:
            linked_copy(DIST / variant, target / variant)
    return target


def add(tree: Path, rel: str, *docs: dict[str, Any]) -> str:
    path = tree / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return rel


@pytest.fixture
def out_copy(tmp_path: Path) -> Path:
    """A previous output; a slice of the real tree keeps 80+ cases fast and proves the same."""
    target = tmp_path / "out"
    part = Path("one-cluster", "kubeadm")
    shutil.copytree(DIST / part, target / part)
    return target


@pytest.fixture(scope="session")
def inputs() -> dict[str, Any]:
    """Each variant of the committed dist/ as the bring-up simulation reads it (tree, texts)."""
    from sitegen.check.bringup import from_dist

    return {v.name: from_dist(DIST, v.name) for v in sorted(DIST.iterdir()) if v.is_dir()}
