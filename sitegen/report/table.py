"""Plain-text tables: the first column left-aligned, the others right-aligned."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
