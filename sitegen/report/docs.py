"""The blocks of docs/ that show the site's own figures, generated from config/ like dist/ is.

A page marks each block `<!-- generated: sitegen <name> -->` ... `<!-- end generated -->`; `make synth`
rewrites them (`sitegen docs`), and `sitegen check` refuses a page whose block is not what config/ gives,
so no figure is pasted by hand or goes stale.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from sitegen.errors import SiteError
from sitegen.model import Site

BLOCK = re.compile(
    r"(?P<begin><!-- generated: sitegen (?P<name>[a-z ]+) -->\n)(?P<body>.*?)(?P<end><!-- end generated -->)",
    re.S,
)


def _components(site: Site) -> str:
    from sitegen.report.components import component_table

    return component_table(site)


def _plan_storage(site: Site) -> str:
    from sitegen.report.plan import compute_plan, storage_section
    from sitegen.report.table import wrapped_prose

    return "```\n" + "\n".join(wrapped_prose(storage_section(site, compute_plan(site)))) + "\n```\n"


def _rules(site: Site) -> str:
    """The policy rules validate runs, as `sitegen rules` lists them (a Markdown table)."""
    from sitegen.check.rules import RULES

    rows = [
        f"| {r.id} | {r.name} | {r.rationale.replace('|', '/')} |" for r in sorted(RULES, key=lambda r: r.id)
    ]
    return "\n".join(["| id | rule | why |", "|---|---|---|", *rows]) + "\n"


GENERATORS: dict[str, Callable[[Site], str]] = {
    "components": _components,
    "plan storage": _plan_storage,
    "rules": _rules,
}


class UnknownBlock(SiteError):
    """A generated block of docs/ no generator writes."""


def refreshed(text: str, site: Site, page: Path) -> str:
    """The page with every generated block rewritten from the site."""

    def block(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            known = ", ".join(sorted(GENERATORS))
            raise UnknownBlock(f"{page}: generated block {name!r} has no generator (known: {known})")
        return match["begin"] + GENERATORS[name](site) + match["end"]

    return BLOCK.sub(block, text)


def pages(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*.md") if BLOCK.search(p.read_text()))


def _rewrites(root: Path, site: Site) -> dict[Path, str]:
    """The pages whose blocks differ from what the site gives, with their new text."""
    found = {}
    for page in pages(root):
        text = page.read_text()
        new = refreshed(text, site, page)
        if new != text:
            found[page] = new
    return found


def stale(root: Path, site: Site) -> list[Path]:
    return list(_rewrites(root, site))


def refresh(root: Path, site: Site) -> list[Path]:
    """Rewrite the stale pages; the ones written."""
    rewrites = _rewrites(root, site)
    for page, text in rewrites.items():
        page.write_text(text)
    return list(rewrites)
