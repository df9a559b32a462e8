"""One error base: every known failure is a SiteError the CLI prints as `error:` lines with exit 2, in
one place; anything else is a traceback on purpose; no module but the CLI ends the process."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sitegen.compose.chart_supply import ChartFault
from sitegen.compose.hydrate import HydrationError
from sitegen.errors import Refused, SiteError
from sitegen.model import ConfigFault
from sitegen.report.diff import DiffError
from sitegen.report.docs import UnknownBlock
from sitegen.report.scan import ScanError

from .conftest import REPO, invoke_sitegen


@pytest.mark.parametrize(
    "known", [ConfigFault, ChartFault, HydrationError, DiffError, ScanError, UnknownBlock, Refused]
)
def test_every_known_failure_is_a_site_error(known):
    assert issubclass(known, SiteError)


def _exits(path: Path) -> list[int]:
    """Lines that call sys.exit (or exit/quit) in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            base = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if (base, name) == ("sys", "exit") or (not base and name in ("exit", "quit")):
                found.append(node.lineno)
    return found


def test_only_the_cli_ends_the_process():
    modules = [*(REPO / "sitegen").rglob("*.py"), *(REPO / "constructs").glob("*.py"), REPO / "main.py"]
    offenders = {
        str(p.relative_to(REPO)): lines
        for p in modules
        if p != REPO / "sitegen" / "cli.py" and (lines := _exits(p))
    }
    assert offenders == {}


def test_a_site_error_is_error_lines_and_exit_2(tmp_path):
    result = invoke_sitegen("charts", "--mirror", tmp_path)
    assert result.exit_code == 2
    assert result.output.strip() == "error: --mirror and --origin go with --renew"
    result = invoke_sitegen("docs", "--docs", tmp_path / "missing")
    assert (result.exit_code, result.output.strip()) == (
        2,
        f"error: {tmp_path / 'missing'}: directory does not exist",
    )


def test_several_config_faults_are_a_line_each(config_copy):
    (config_copy / "pools.yaml").write_text(
        (config_copy / "pools.yaml").read_text().replace("count:", "cuont:")
    )
    result = invoke_sitegen("plan", "--config", config_copy)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) > 1, result.output
    assert all(line.startswith(f"error: {config_copy / 'pools.yaml'}: ") for line in lines), lines


def test_anything_else_is_a_traceback(monkeypatch):
    import sitegen.report.plan as plan

    def broken(site):
        raise RuntimeError("a bug")

    monkeypatch.setattr(plan, "render_plan", broken)
    result = invoke_sitegen("plan")
    assert isinstance(result.exception, RuntimeError) and result.exit_code == 1
