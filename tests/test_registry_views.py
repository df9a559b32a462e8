"""Views derived from the component registry that reviewers read: the policy allow-lists (a new
privileged namespace or node agent shows up as its own hunk in this snapshot) and the component table
of docs/components.md (written by `sitegen docs`; tests/test_site_checks.py)."""

from __future__ import annotations

from sitegen.check.allowlists import allow_lists
from sitegen.report.components import component_table

from .conftest import REPO, invoke_sitegen


def test_allow_lists_snapshot(site, snapshot):
    assert allow_lists(site).lines() == snapshot


def test_rules_command_prints_the_allow_lists():
    result = invoke_sitegen("rules")
    assert result.exit_code == 0
    assert "privileged namespaces:" in result.stdout
    assert "  gpu-operator: driver container" in result.stdout


def test_component_table_links_every_module(site):
    for line in component_table(site).splitlines()[2:]:
        link = line.split("](../", 1)[1].split(")", 1)[0]
        assert (REPO / link).is_file(), link
