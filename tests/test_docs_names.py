"""docs/components.md names only what exists: every code name it quotes (`name` or `name(args)`) is
still spelled somewhere in sitegen/ or constructs/."""

from __future__ import annotations

import re

from .conftest import REPO


def test_the_component_guide_names_only_what_exists():
    text = (REPO / "docs" / "components.md").read_text()
    quoted = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\([^`]*\))?`", text))
    code = "".join(p.read_text() for root in ("sitegen", "constructs") for p in (REPO / root).rglob("*.py"))
    assert quoted and sorted(name for name in quoted if not re.search(rf"\b{name}\b", code)) == []
