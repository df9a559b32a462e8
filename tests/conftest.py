"""Shared fixtures: the default site, editable copies of config/, and the CLI as a subprocess."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

import sitegen  # noqa: F401  (selects the project's Node for jsii before cdk8s loads)
from sitegen.model import Site, load_site

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config"
DIST = REPO / "dist"
SITEGEN = Path(sys.executable).parent / "sitegen"


@pytest.fixture(scope="session")
def site() -> Site:
    return load_site(CONFIG)


@pytest.fixture(scope="session")
def docs():
    """The committed dist/ read back as documents (bodies are shared: read only)."""
    from sitegen.check.tree import load_tree

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


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """A copy of the committed dist/ to break (removed after the test: 45 MB each)."""
    target = tmp_path / "dist"
    shutil.copytree(DIST, target)
    yield target
    shutil.rmtree(target, ignore_errors=True)


def add(tree: Path, rel: str, *docs: dict[str, Any]) -> str:
    path = tree / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return rel


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default site synthesized once; bad-input tests copy it as the --out they must not touch."""
    out = tmp_path_factory.mktemp("synthesized") / "dist"
    result = run_sitegen("synth", "--out", out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def out_copy(synthesized: Path, tmp_path: Path) -> Path:
    """A previous output; a slice of the real tree keeps 80+ cases fast and proves the same."""
    target = tmp_path / "out"
    part = Path("one-cluster", "kubeadm")
    shutil.copytree(synthesized / part, target / part)
    return target


@pytest.fixture(scope="session")
def inputs() -> dict[str, Any]:
    """Each variant of the committed dist/ as the bring-up simulation reads it (tree, texts)."""
    from sitegen.check.bringup import from_dist

    return {v.name: from_dist(DIST, v.name) for v in sorted(DIST.iterdir()) if v.is_dir()}
