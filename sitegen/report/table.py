"""Plain-text tables that fit a terminal: figures right-aligned, text left-aligned; a table wider than
`width` wraps its widest text columns onto more lines per row."""

from __future__ import annotations

import json
import textwrap

WIDTH = 100
GAP = "  "


def _fitted(natural: list[int], floors: list[int], width: int) -> list[int]:
    """Column widths within `width`: the widest column gives way first, none below its floor."""
    widths = list(natural)
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    while excess > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        runner_up = max((widths[i] for i in shrinkable if i != widest), default=0)
        target = max(floors[widest], runner_up, widths[widest] - excess)
        if target == widths[widest]:  # tied with the runner-up: take one column off both in turn
            target -= 1
        excess -= widths[widest] - target
        widths[widest] = target
    return widths


def _wrap(cell: str, width: int) -> list[str]:
    # at spaces only: a name (ai-admission-policies) stays whole unless it alone is wider than the column
    return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]


def table(headers: list[str], rows: list[list[str]], width: int = WIDTH) -> list[str]:
    natural = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    floors = [
        min(n, max(12, *(len(word) for word in h.split()))) for n, h in zip(natural, headers, strict=True)
    ]
    widths = _fitted(natural, floors, width)
    wrapped = {i for i, (w, n) in enumerate(zip(widths, natural, strict=True)) if w < n}
    figures = {
        i
        for i in range(1, len(headers))
        if i not in wrapped and rows and all(r[i][:1].isdigit() or r[i] == "-" for r in rows)
    }

    def lines(row: list[str]) -> list[str]:
        cells = [
            _wrap(cell, w) if i in wrapped else [cell]
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out = []
        for k in range(max(len(c) for c in cells)):
            parts = [c[k] if k < len(c) else "" for c in cells]
            out.append(
                GAP.join(
                    part.rjust(w) if i in figures else part.ljust(w)
                    for i, (part, w) in enumerate(zip(parts, widths, strict=True))
                ).rstrip()
            )
        return out

    return [*lines(headers), GAP.join("-" * w for w in widths), *(x for r in rows for x in lines(r))]


def wrapped_prose(lines: list[str], width: int = WIDTH) -> list[str]:
    """Lines of prose beside the tables, wrapped to `width` (continuations indented)."""
    return [
        part
        for line in lines
        for part in (textwrap.wrap(line, width, subsequent_indent="  ") if len(line) > width else [line])
    ]


def records(headers: list[str], rows: list[list[str]]) -> str:
    """The rows of a table as JSON objects keyed by its headers (spaces as underscores), for scripts."""
    keys = [h.replace(" ", "_") for h in headers]
    return json.dumps([dict(zip(keys, row, strict=True)) for row in rows], indent=2) + "\n"
