"""`make help` lists every target a person runs, each with its line."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import PurePosixPath

from .conftest import REPO


def test_make_help_names_every_phony_target():
    makefile = (REPO / "Makefile").read_text()
    (phony,) = re.findall(r"^\.PHONY: (.+)$", makefile, re.M)
    shown = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True, check=True
    )
    listed = {line.split()[1]: line for line in shown.stdout.splitlines()}
    assert sorted(listed) == sorted(phony.split())
    assert all(len(line.split(None, 2)) == 3 for line in listed.values())  # each with its description


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    """make as a fresh shell runs it: none of the optional inputs set."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "CHARTS", "MIRROR", "MAKEFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, check=True, env=env
    )


def _phony() -> list[str]:
    (phony,) = re.findall(r"^\.PHONY: (.+)$", (REPO / "Makefile").read_text(), re.M)
    return phony.split()


def test_no_rule_reads_a_variable_that_is_not_defined_yet():
    """make expands a prerequisite list when it reads the rule: a stamp defined further down is empty
    there, and the set-up it names silently drops out (it once took Ansible out of `make test`)."""
    dry = _make("-n", "--warn-undefined-variables", *_phony())
    assert "undefined variable" not in dry.stderr, dry.stderr


def _prerequisites() -> tuple[dict[str, str], dict[str, list[str]]]:
    """make's own database: the stamp variables' values and every rule's prerequisites."""
    database = _make("-pn", "help").stdout
    stamps = dict(re.findall(r"^([A-Z_]+_STAMP) :?= (\S+)$", database, re.M))
    rules = {
        target: prerequisites.split()
        for target, prerequisites in re.findall(r"^([A-Za-z.][^\s:=#]*):(?![=:]) ?([^=\n]*)$", database, re.M)
    }
    return stamps, rules


def _closure(rules: dict[str, list[str]], target: str) -> set[str]:
    seen, todo = set(), [target]
    while todo:
        here = todo.pop()
        if here not in seen:
            seen.add(here)
            todo += rules.get(here, [])
    return seen


def test_the_readmes_two_commands_install_everything_they_use():
    """`make synth` installs the generator's packages; `make test` every tool a test runs (the scanner
    of `make site`, Ansible of the playbook tests): on a fresh clone they are the whole set-up."""
    stamps, rules = _prerequisites()
    assert set(stamps) == {"PY_STAMP", "NPM_STAMP", "SCAN_STAMP", "ANSIBLE_STAMP"}
    assert {stamps["PY_STAMP"], stamps["NPM_STAMP"]} <= _closure(rules, "synth")
    assert set(stamps.values()) <= _closure(rules, "test")


def test_the_workflow_keeps_every_installed_tree():
    """GitHub's CI restores each folder make installs into, keyed on the lock it was installed from:
    a tree left out is installed again on every run."""
    stamps, _ = _prerequisites()
    workflow = (REPO / ".github" / "workflows" / "ci.yaml").read_text()
    cached = set(re.findall(r"^\s+path: (\S+)$", workflow, re.M))
    assert {PurePosixPath(stamp).parent.as_posix() for stamp in stamps.values()} <= cached
