"""Which components each cluster of a variant gets, checked against their declared dependencies.

Composition fails, naming both components, when a component must come after one its cluster does not
have, or after one that does not sync before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sitegen.components.base import ChartComponent, Component
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.compose.hosts import HOST_IMAGES
from sitegen.model import ClusterLayout, PinNeeds, Site, VariantLayout


class CompositionError(Exception):
    """The registry's declarations do not compose into a site (a bug of the generator, not of config)."""


@dataclass(frozen=True)
class VariantApps:
    site: Site
    layout: VariantLayout
    by_cluster: dict[str, tuple[Component, ...]]  # in sync order (wave, then name)

    def context(self, cluster: ClusterLayout) -> ClusterContext:
        return ClusterContext(
            site=self.site,
            variant=self.layout,
            cluster=cluster,
            components=self.by_cluster[cluster.name],
            variant_components=self.by_cluster,
        )

    @cached_property
    def contexts(self) -> tuple[ClusterContext, ...]:
        return tuple(self.context(c) for c in self.layout.clusters)

    def members(self) -> list[tuple[ClusterContext, Component]]:
        """Every (cluster, component) of the variant, clusters in variant order, then sync order."""
        return [(ctx, c) for ctx in self.contexts for c in ctx.components]

    def in_registry_order(self) -> list[tuple[ClusterContext, Component]]:
        """Every (cluster, component) of the variant, clusters in variant order, then registry order."""
        rank = {kind: i for i, kind in enumerate(COMPONENTS)}
        return [
            (ctx, c) for ctx in self.contexts for c in sorted(ctx.components, key=lambda c: rank[type(c)])
        ]


def variant_apps(site: Site, layout: VariantLayout) -> VariantApps:
    by_cluster = {}
    for cluster in layout.clusters:
        scope = ClusterScope(site=site, variant=layout, cluster=cluster)
        found = [instance for kind in COMPONENTS for instance in kind.instances(scope)]
        names = [c.name for c in found]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise CompositionError(f"cluster {cluster.name}: two components are named {', '.join(twice)}")
        by_cluster[cluster.name] = tuple(sorted(found, key=lambda c: (c.wave, c.name)))
    apps = VariantApps(site, layout, by_cluster)
    for ctx in apps.contexts:
        _check_dependencies(ctx)
    return apps


def _check_dependencies(ctx: ClusterContext) -> None:
    for component in ctx.components:
        for kind in component.dependencies(ctx):
            dependency = ctx.find(kind)
            if dependency is None:
                raise CompositionError(
                    f"cluster {ctx.cluster.name}: {component.name} must come after {kind.name}, "
                    "which the cluster does not have"
                )
            if dependency.wave >= component.wave:
                raise CompositionError(
                    f"cluster {ctx.cluster.name}: {component.name} (wave {component.wave}) must come after "
                    f"{dependency.name} (wave {dependency.wave})"
                )


def pin_needs() -> PinNeeds:
    """Every chart and image pin the registry's components and the host files use."""
    charts: dict[str, str] = {}
    images = dict(HOST_IMAGES)
    for kind in COMPONENTS:
        if issubclass(kind, ChartComponent):
            charts.setdefault(kind.chart, kind.name)
        for key, needed_by in kind.images.items():
            images.setdefault(key, needed_by)
    return PinNeeds(charts=dict(sorted(charts.items())), images=dict(sorted(images.items())))
