"""`sitegen doctor`: what this machine lacks, and the command that fixes it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .conftest import REPO, SITEGEN


def _doctor(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SITEGEN), "doctor"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_ready_machine(tmp_path: Path):
    result = _doctor()
    assert result.returncode == 0, result.stdout
    assert result.stdout.rstrip().endswith("ready: make synth, make test")
    assert "ok helm                 v4.1.4" in result.stdout


def test_a_missing_helm_names_the_fix():
    result = _doctor(SITEGEN_HELM="/nonexistent/helm")
    assert result.returncode == 1
    assert "!! helm" in result.stdout and "fix: make deps" in result.stdout


def test_an_empty_cache_costs_nothing_but_time(tmp_path: Path):
    """Charts are vendored: a machine without a render cache is ready."""
    result = _doctor(SITEGEN_CACHE=str(tmp_path / "cache"))
    assert result.returncode == 0, result.stdout
    assert "ok vendored charts" in result.stdout
