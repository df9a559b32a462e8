"""Values rules: what we give a chart is what the chart takes."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.compose.chart_values import chart_keys, values_problems


@rule(
    "VAL-001",
    "chart-takes-values",
    "a key the pinned chart neither declares nor reads is ignored by Helm: the site silently lacks it",
)
def _chart_takes_values(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.file not in ctx.charts:
            continue
        chart, archive = ctx.charts[doc.file]
        for path, problem in values_problems(chart, chart_keys(archive), doc.body):
            yield Violation(doc, f"$.{path}", problem)
