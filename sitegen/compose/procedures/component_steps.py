"""The steps the components ask of the operator (`Component.operator_steps`), at the stage of the frame
that calls for them: cluster by cluster, each cluster's in sync order."""

from __future__ import annotations

from collections.abc import Iterable

from sitegen.components.operator_steps import DAY_2_STAGES, OperatorStep, Stage
from sitegen.compose.apps import CompositionError, VariantApps
from sitegen.model import ClusterLayout
from sitegen.tree.runbook import Runbook


def _declared(apps: VariantApps, stage: Stage, clusters: Iterable[ClusterLayout]) -> list[OperatorStep]:
    return [
        step
        for ctx in (apps.context(cluster) for cluster in clusters)
        for component in ctx.components
        for step in component.operator_steps(ctx)
        if step.stage is stage
    ]


def component_steps(
    book: Runbook, apps: VariantApps, stage: Stage, clusters: Iterable[ClusterLayout]
) -> None:
    """The numbered steps of `stage`."""
    part = None
    for step in _declared(apps, stage, clusters):
        if step.part is not None and step.part != part:
            book.part(step.part)
            part = step.part
        book.step(step.title, step.body, after=step.after)


def day2_sections(apps: VariantApps, stage: Stage) -> list[str]:
    """The sections the components add to Day 2 at `stage`, each under its title, unnumbered, once."""
    assert stage in DAY_2_STAGES, stage
    sections = []
    for step in dict.fromkeys(_declared(apps, stage, apps.layout.clusters)):
        if step.after is not None or step.part is not None:
            raise CompositionError(f"{step.title}: a section of Day 2 has no `after` or `part`")
        sections.append(f"### {step.title}\n\n{step.body.strip()}\n")
    return sections
