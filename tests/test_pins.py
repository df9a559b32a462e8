"""Snapshot normalisation (tests/pins.py) names a pin only where its value stands as a token."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from .pins import pin_placeholders, standalone, unpinned

PINS = [("v0.3.2", "<charts.x>"), ("0.3.2", "<charts.x>")]


def test_a_pinned_version_is_not_replaced_inside_an_address():
    """Put-back: `0.3.2` was replaced inside 10.20.3.251, hiding an address change in the snapshot."""
    assert unpinned({"ip": "10.20.3.251"}, PINS) == {"ip": "10.20.3.251"}
    assert unpinned(["chart-0.3.2", "repo/app:v0.3.2", "0.3.2"], PINS) == [
        "chart-<charts.x>",
        "repo/app:<charts.x>",
        "<charts.x>",
    ]


def _literals(tree: ast.Module) -> Iterator[ast.Constant]:
    """The module's string constants but its docstrings (those cite the version an upstream fact was
    read at; they do not fail when it moves)."""
    documented = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documented:
            yield node


def test_no_test_spells_a_pinned_version(site):
    """The seed fixture shares versions.yaml with the site (the vendored charts follow it), so a Renovate
    bump reaches the generator's tests: one that spells a pinned value turns red on the bump, or worse
    stops testing what it meant to (a replace that no longer matches). Read the value from the fixture's
    `site.versions` instead."""
    pins = [(value, name) for value, name in pin_placeholders(site.versions) if "." in value]
    own = {Path(__file__), Path(__file__).with_name("pins.py")}
    spelled = []
    for source in sorted(Path(__file__).parent.rglob("*.py")):
        if source in own or "fixtures" in source.parts:
            continue
        for literal in _literals(ast.parse(source.read_text())):
            spelled += [
                f"{source.name}:{literal.lineno}: {value} ({name})"
                for value, name in pins
                if standalone(value).search(literal.value)
            ]
    assert spelled == [], "\n".join(spelled)
