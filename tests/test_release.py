"""The generator as a product: its version on the command line is the one it is released under, and
the changelog says what that version changes."""

from __future__ import annotations

import tomllib

from .conftest import REPO, run_sitegen


def test_the_version_is_the_released_one_and_has_a_changelog_entry():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    result = run_sitegen("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"sitegen {version}"
    assert f"\n## {version}\n" in (REPO / "CHANGELOG.md").read_text()
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License")
