"""Which components each cluster of a variant gets, and their sync order, computed from what each
component declares it must come after (or before).

A component's sync wave is 10 x its layer + its depth among the dependencies inside its layer; a
dependency on a later layer, a missing dependency or a cycle fails composition, naming the components.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from sitegen.components.base import ChartComponent, Component
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.tenants.tenant import Tenant
from sitegen.compose.hosts import HOST_IMAGES
from sitegen.model import ClusterLayout, ConfigError, PinNeeds, Site, VariantLayout

WAVES_PER_LAYER = 10


class CompositionError(Exception):
    """The registry's declarations do not compose into a site (a bug of the generator, not of config)."""


@dataclass(frozen=True)
class VariantApps:
    site: Site
    layout: VariantLayout
    by_cluster: dict[str, tuple[Component, ...]]  # in sync order (wave, then name)
    waves: dict[str, dict[str, int]]  # cluster -> component name -> sync wave
    registry: Sequence[type[Component]] = COMPONENTS  # what `by_cluster` was found in

    def context(self, cluster: ClusterLayout) -> ClusterContext:
        return ClusterContext(
            site=self.site,
            variant=self.layout,
            cluster=cluster,
            components=self.by_cluster[cluster.name],
            variant_components=self.by_cluster,
            waves=self.waves[cluster.name],
        )

    @cached_property
    def contexts(self) -> tuple[ClusterContext, ...]:
        return tuple(self.context(c) for c in self.layout.clusters)

    def members(self) -> list[tuple[ClusterContext, Component]]:
        """Every (cluster, component) of the variant, clusters in variant order, then sync order."""
        return [(ctx, c) for ctx in self.contexts for c in ctx.components]

    def in_registry_order(self) -> list[tuple[ClusterContext, Component]]:
        """Every (cluster, component) of the variant, clusters in variant order, then registry order."""
        rank = {kind: i for i, kind in enumerate(self.registry)}
        return [
            (ctx, c) for ctx in self.contexts for c in sorted(ctx.components, key=lambda c: rank[type(c)])
        ]


def _check_namespaces(found: Sequence[Component]) -> None:
    """Two components creating one namespace would fight over it; a tenant named after a platform
    namespace is a config mistake, named as such."""
    owners: dict[str, Component] = {}
    for component in sorted(found, key=lambda c: isinstance(c, Tenant)):  # platform first
        if component.security is None:
            continue
        other = owners.setdefault(component.namespace, component)
        if other is component:
            continue
        if isinstance(component, Tenant):
            raise ConfigError(
                ("tenants", component.tenant),
                f"namespace {component.namespace!r} belongs to component {other.name}: choose another tenant name",
            )
        raise CompositionError(
            f"components {other.name} and {component.name} both create namespace {component.namespace}"
        )


def variant_apps(
    site: Site, layout: VariantLayout, registry: Sequence[type[Component]] = COMPONENTS
) -> VariantApps:
    by_cluster: dict[str, tuple[Component, ...]] = {}
    waves: dict[str, dict[str, int]] = {}
    for cluster in layout.clusters:
        scope = ClusterScope(site=site, variant=layout, cluster=cluster)
        found = [instance for kind in registry for instance in kind.instances(scope)]
        names = [c.name for c in found]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise CompositionError(f"cluster {cluster.name}: two components are named {', '.join(twice)}")
        _check_namespaces(found)
        # dependencies may depend on what else the cluster has: ask with every component present
        unordered = ClusterContext(
            site=site,
            variant=layout,
            cluster=cluster,
            components=tuple(found),
            variant_components={},
            waves={},
        )
        waves[cluster.name] = sync_waves(unordered)
        by_cluster[cluster.name] = tuple(sorted(found, key=lambda c: (waves[cluster.name][c.name], c.name)))
    return VariantApps(site, layout, by_cluster, waves, registry)


def predecessors(ctx: ClusterContext) -> dict[str, list[Component]]:
    """Component name -> the components that must sync before it."""
    where = f"cluster {ctx.cluster.name}"
    before: dict[str, list[Component]] = {c.name: [] for c in ctx.components}
    for component in ctx.components:
        for kind in component.dependencies(ctx):
            found = ctx.all(kind)
            if not found:
                raise CompositionError(
                    f"{where}: {component.name} must come after {kind.name}, which the cluster does not have"
                )
            before[component.name] += found
        for kind in component.before:
            for later in ctx.all(kind):
                before[later.name].append(component)
    for component in ctx.components:
        for earlier in before[component.name]:
            if earlier.layer > component.layer:
                raise CompositionError(
                    f"{where}: {component.name} ({component.layer.name.lower()}) cannot come after "
                    f"{earlier.name} ({earlier.layer.name.lower()}), a later layer"
                )
    return before


def sync_waves(ctx: ClusterContext) -> dict[str, int]:
    """The sync wave of every component of the cluster (raises on a missing dependency or a cycle)."""
    before = predecessors(ctx)
    by_name = {c.name: c for c in ctx.components}
    depth: dict[str, int] = {}
    visiting: list[str] = []

    def visit(name: str) -> int:
        if name in depth:
            return depth[name]
        if name in visiting:
            cycle = [*visiting[visiting.index(name) :], name]
            raise CompositionError(f"cluster {ctx.cluster.name}: dependency cycle {' -> '.join(cycle)}")
        visiting.append(name)
        layer = by_name[name].layer
        same_layer = [visit(e.name) for e in before[name] if e.layer == layer]
        visiting.pop()
        depth[name] = 1 + max(same_layer) if same_layer else 0
        if depth[name] >= WAVES_PER_LAYER:
            raise CompositionError(f"cluster {ctx.cluster.name}: {name} is {depth[name]} deep in its layer")
        return depth[name]

    return {c.name: WAVES_PER_LAYER * int(c.layer) + visit(c.name) for c in ctx.components}


def pin_needs(registry: Sequence[type[Component]] = COMPONENTS) -> PinNeeds:
    """Every chart and image pin the registry's components and the host files use."""
    charts: dict[str, str] = {}
    images = dict(HOST_IMAGES)
    for kind in registry:
        if issubclass(kind, ChartComponent):
            charts.setdefault(kind.chart, f"component {kind.name}")
        for key, needed_by in kind.images.items():
            images.setdefault(key, f"component {kind.name}: {needed_by}")
    return PinNeeds(charts=dict(sorted(charts.items())), images=dict(sorted(images.items())))
