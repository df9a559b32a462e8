"""`sitegen check` (make site): the site's own checks, on whatever config/ holds. Each refusal is one
line and stops the run; generated docs blocks are part of what synth must have written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sitegen.report import docs as generated

from .conftest import CONFIG, DIST, REPO, edit_yaml, invoke_sitegen


@pytest.fixture
def pages(tmp_path: Path, site) -> Path:
    """docs/ pages with their generated blocks written from the fixture site."""
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "docs", folder)
    generated.refresh(folder, site)
    return folder


def check(config: Path, docs: Path):
    return invoke_sitegen("check", "--config", config, "--dist", DIST, "--docs", docs)


def test_the_fixture_site_passes_its_checks(pages):
    result = check(CONFIG, pages)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].endswith("0 findings (schema: 0, policy: 0)")
    assert [line.split(":")[0] for line in lines[1:]] == [
        "bring-up of one-cluster",
        "bring-up of two-cluster",
    ]


def test_a_config_change_without_synth_is_refused_as_stale(config_copy, pages):
    edit_yaml(config_copy, "tenants.yaml", lambda t: t["ai-research"].update(description="changed"))
    result = check(config_copy, pages)
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {DIST / 'INPUTS'}: ") and "run `make synth`" in line


def test_a_config_error_is_one_line_and_stops(config_copy, pages):
    edit_yaml(config_copy, "network.yaml", lambda n: n["kubernetes"].update(cidr="10.20.0.0/33"))
    result = check(config_copy, pages)
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {config_copy / 'network.yaml'}: kubernetes.cidr: ")


def test_a_stale_docs_block_is_refused_and_synth_rewrites_it(pages, site):
    page = pages / "site.md"
    page.write_text(page.read_text().replace("Storage hierarchy", "Storage tiers (edited by hand)"))
    result = check(CONFIG, pages)
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"error: {page}: generated blocks are stale: run `make synth`"]
    assert invoke_sitegen("docs", "--config", CONFIG, "--docs", pages).exit_code == 0
    assert check(CONFIG, pages).exit_code == 0


def test_every_generated_block_names_a_generator(pages):
    page = pages / "components.md"
    page.write_text(page.read_text() + "\n<!-- generated: sitegen tenants -->\nx\n<!-- end generated -->\n")
    result = invoke_sitegen("docs", "--config", CONFIG, "--docs", pages)
    assert result.exit_code == 2
    assert "generated block 'tenants' has no generator" in result.output


def test_docs_blocks_show_the_site_they_are_generated_from(pages, site, config_copy):
    """The storage map follows config/: a new AIStor server pool appears in it (4 servers more)."""
    pools = config_copy / "pools.yaml"
    pools.write_text(pools.read_text().replace("count: 30", "count: 34").replace("st{01..30}", "st{01..34}"))
    storage = config_copy / "storage.yaml"
    storage.write_text(
        storage.read_text().replace("    - servers: 30\n", "    - servers: 30\n    - servers: 4\n")
    )
    assert invoke_sitegen("docs", "--config", config_copy, "--docs", pages).exit_code == 0
    assert "\npool-1        4" in (pages / "site.md").read_text()
    assert generated.pages(pages) == [pages / "components.md", pages / "site.md", pages / "usage.md"]
