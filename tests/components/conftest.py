"""Component tests build the small fixture site (tests/fixtures/small-site: 1 control-plane, 1 infra,
3 compute, 2 GPU, 4 storage nodes), never the 102-node default: the committed dist/ and the drift
test are the end-to-end check."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cdk8s import App

from sitegen.components.base import ChartComponent, Component, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.compose.apps import VariantApps, pin_needs, variant_apps
from sitegen.compose.charts import ObjectChart
from sitegen.compose.variant import render_order
from sitegen.model import Site, load_site, resolve

SMALL_SITE = Path(__file__).resolve().parent.parent / "fixtures" / "small-site"


@pytest.fixture(scope="session")
def small() -> Site:
    return load_site(SMALL_SITE, pin_needs())


@pytest.fixture(scope="session")
def one(small: Site) -> VariantApps:
    return variant_apps(small, resolve(small, "one-cluster"))


@pytest.fixture(scope="session")
def two(small: Site) -> VariantApps:
    return variant_apps(small, resolve(small, "two-cluster"))


def context(apps: VariantApps, cluster: str) -> ClusterContext:
    return next(ctx for ctx in apps.contexts if ctx.cluster.name == cluster)


def output(ctx: ClusterContext, component: Component) -> Any:
    """A component's objects (rendered) or its values document (chart)."""
    if isinstance(component, RenderedComponent):
        chart = ObjectChart(App(), "test", folder=Path("test"))
        if component.reads_rendered:  # as synth does: what every app rendered before it (charts aside)
            order = render_order(ctx)
            others = [c for c in order[: order.index(component)] if isinstance(c, RenderedComponent)]
            ctx = dataclasses.replace(ctx, rendered={c.name: output(ctx, c) for c in others})
        component.render(chart, ctx)
        return chart.documents
    assert isinstance(component, ChartComponent)
    return component.values(ctx).document()


def render(apps: VariantApps, cluster: str, kind: type[Component]) -> Any:
    ctx = context(apps, cluster)
    return output(ctx, ctx.get(kind))


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]
