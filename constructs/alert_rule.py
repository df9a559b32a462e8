"""One alerting rule as the site's PrometheusRules write it, and the count per node the GPU and fabric rules share."""

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


def per_node(series: str, nodes: str, expected: int) -> str:
    """Nodes showing fewer than `expected` of `series`, none counting as 0: a count of no series is no
    sample, not 0, so a node whose driver shows nothing at all would be silent. Which nodes there are
    comes from node-exporter's `node_uname_info` (every node has one, labelled like the rest)."""
    return f"(count by (node) ({series}) or on (node) (0 * count by (node) (node_uname_info{nodes}))) < {expected}"
