"""Every report fits a 100-column terminal: tables wrap their widest text columns, prose wraps."""

from __future__ import annotations

import json

import pytest

from sitegen.report.table import WIDTH, table

from .conftest import invoke_sitegen


@pytest.mark.parametrize("command", ["plan", "apps", "flows", "projects", "rules"])
def test_report_fits_the_terminal(command):
    result = invoke_sitegen(command)
    assert result.exit_code == 0, result.output
    wide = [line for line in result.output.splitlines() if len(line) > WIDTH]
    assert wide == []


def test_a_wide_table_wraps_its_widest_text_column_and_keeps_figures_whole():
    rows = [["gpu", "12", "one node kept for the model servers, whose budget the plan claims " * 2]]
    lines = table(["pool", "nodes", "because"], rows, width=60)
    assert max(map(len, lines)) <= 60
    assert lines[2].startswith("gpu      12  one node kept")  # figures right-aligned, text left
    assert len(lines) > 3 and lines[3].startswith(" " * 13)  # the reason goes on under its column
    assert " ".join(line[13:].strip() for line in lines[2:]) == rows[0][2].strip()


def test_a_narrow_table_is_unchanged():
    assert table(["a", "b"], [["x", "1"], ["long text", "22"]]) == [
        "a           b",
        "---------  --",
        "x           1",
        "long text  22",
    ]


@pytest.mark.parametrize("command", ["plan", "apps", "flows", "projects"])
def test_json_output_is_what_the_table_shows(command):
    text = invoke_sitegen(command).output
    data = json.loads(invoke_sitegen(command, "--format", "json").stdout)
    assert data
    if command == "plan":
        assert data["site"]["gpus"] == sum(p["gpus"] for p in data["pools"].values())
        assert f"{data['site']['gpus']}" in text
        return
    for row in data[:5]:
        first = next(iter(row.values()))
        assert first in text  # every record is a row of the table


def test_a_wrapped_cell_keeps_names_whole():
    """Wrapped at spaces, not at a name's hyphens: `ai-admission-policies` is read and searched whole."""
    rows = [["one", "a few words then ai-admission-policies and more words"]]
    lines = table(["n", "apps"], rows, width=30)
    assert any("ai-admission-policies" in line for line in lines), lines
