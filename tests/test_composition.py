"""Composition: the components each cluster gets and their sync waves, computed from the declared
dependencies; a missing dependency, a cycle or a dependency on a later layer fails, naming both."""

from __future__ import annotations

import pytest

from constructs import Construct
from sitegen.components.base import Layer, Project, RenderedComponent
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext
from sitegen.compose.apps import CompositionError, variant_apps
from sitegen.model import resolve

DEMO = Project("demo", "test components")


def _component(name: str, layer: Layer = Layer.FOUNDATION, **attrs) -> type[RenderedComponent]:
    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        pass

    return type(
        name.title(),
        (RenderedComponent,),
        {"name": name, "project": DEMO, "layer": layer, "render": render, **attrs},
    )


def _waves(site, *registry):
    apps = variant_apps(site, resolve(site, "one-cluster"), registry)
    return apps.waves["ai"]


def test_waves_follow_the_dependency_depth_inside_a_layer(site):
    a = _component("a")
    b = _component("b", after=(a,))
    c = _component("c", after=(a, b))
    d = _component("d", Layer.RESOURCES, after=(c,))  # an earlier layer: no depth
    e = _component("e", Layer.RESOURCES, after=(d,))
    assert _waves(site, e, d, c, b, a) == {"a": 0, "b": 1, "c": 2, "d": 10, "e": 11}


def test_before_orders_the_named_component_after_this_one(site):
    chart = _component("chart")
    companion = _component("companion", before=(chart,))
    assert _waves(site, chart, companion) == {"companion": 0, "chart": 1}


def test_a_missing_dependency_names_both_components(site):
    absent = _component("absent", applies=classmethod(lambda cls, scope: False))
    needs = _component("needs", after=(absent,))
    with pytest.raises(
        CompositionError, match="cluster ai: needs must come after absent, which the cluster does not have"
    ):
        _waves(site, absent, needs)


def test_a_dependency_cycle_is_named(site):
    a = _component("a")
    b = _component("b", after=(a,))
    a.after = (b,)
    with pytest.raises(CompositionError, match=r"dependency cycle (a -> b -> a|b -> a -> b)"):
        _waves(site, a, b)


def test_a_dependency_on_a_later_layer_is_refused(site):
    late = _component("late", Layer.SERVICES)
    early = _component("early", Layer.FOUNDATION, after=(late,))
    with pytest.raises(CompositionError, match=r"early \(foundation\) cannot come after late \(services\)"):
        _waves(site, late, early)


def test_two_components_of_one_name_are_refused(site):
    with pytest.raises(CompositionError, match="two components are named twin"):
        _waves(site, _component("twin"), _component("twin"))


@pytest.mark.parametrize("variant", ["one-cluster", "two-cluster"])
def test_the_registry_composes_and_every_dependency_syncs_earlier(site, variant):
    apps = variant_apps(site, resolve(site, variant))
    checked = 0
    for ctx, component in apps.members():
        for kind in component.dependencies(ctx):
            for earlier in ctx.all(kind):
                assert ctx.wave(earlier) < ctx.wave(component)
                checked += 1
        for kind in component.before:
            for later in ctx.all(kind):
                assert ctx.wave(component) < ctx.wave(later)
                checked += 1
    assert checked > 40
    assert {type(c) for _, c in apps.members()} <= set(COMPONENTS)
