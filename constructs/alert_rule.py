"""One alerting rule as the site's PrometheusRules write it."""

from __future__ import annotations

from typing import Any


def alert(
    name: str, expr: str, severity: str, summary: str, for_: str = "5m", runbook_url: str = ""
) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, **({"runbook_url": runbook_url} if runbook_url else {})},
    }


def regex(names: tuple[str, ...] | list[str]) -> str:
    return "|".join(names)
