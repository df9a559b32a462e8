"""The README is one screen, and every relative link in it and in docs/ leads to a file that exists."""

from __future__ import annotations

import re

from .conftest import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_is_one_screen():
    assert len((REPO / "README.md").read_text().splitlines()) <= 45


def test_every_relative_link_resolves():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            assert (page.parent / target).exists(), f"{page.name}: {target}"
            checked += 1
    assert checked > 10
