"""The steps the components ask of the operator (`Component.operator_steps`), at the stage of the frame
that calls for them: cluster by cluster, each cluster's in sync order."""

from __future__ import annotations

from collections.abc import Iterable

from sitegen.components.operator_steps import Stage
from sitegen.compose.apps import VariantApps
from sitegen.model import ClusterLayout
from sitegen.tree.runbook import Runbook


def component_steps(
    book: Runbook, apps: VariantApps, stage: Stage, clusters: Iterable[ClusterLayout]
) -> None:
    part = None
    for cluster in clusters:
        ctx = apps.context(cluster)
        for step in (s for c in ctx.components for s in c.operator_steps(ctx) if s.stage is stage):
            if step.part is not None and step.part != part:
                book.part(step.part)
                part = step.part
            book.step(step.title, step.body, after=step.after)
