"""The component table of docs/components.md, generated from the registry and the site's variants."""

from __future__ import annotations

import inspect
from pathlib import PurePosixPath

from sitegen.components.base import ChartComponent, Component
from sitegen.components.catalog import COMPONENTS
from sitegen.compose.apps import variant_apps
from sitegen.model import Site, resolve


def _module(kind: type[Component]) -> str:
    path = PurePosixPath(inspect.getfile(kind))
    return "/".join(path.parts[path.parts.index("sitegen") :])


def component_table(site: Site) -> str:
    """One Markdown row per registered component: where it runs in each variant, what it is built from."""
    where: dict[type[Component], dict[str, set[str]]] = {}
    names: dict[type[Component], set[str]] = {}
    namespaces: dict[type[Component], set[str]] = {}
    for variant in site.variants:
        for ctx, component in variant_apps(site, resolve(site, variant)).members():
            kind = type(component)
            where.setdefault(kind, {}).setdefault(variant, set()).add(ctx.cluster.name)
            names.setdefault(kind, set()).add(component.name)
            namespaces.setdefault(kind, set()).add(component.namespace)
    header = "| component | project | layer | built from | namespace (Pod Security) | after | " + " | ".join(
        site.variants
    )
    rows = [header + " |", "|" + "---|" * (6 + len(site.variants))]
    for kind in COMPONENTS:
        name = ", ".join(sorted(names.get(kind, {kind.name})))
        if issubclass(kind, ChartComponent):
            pin = site.versions.charts[kind.chart]
            source = f"chart {pin.chart} {pin.version}"
        else:
            source = "cdk8s"
        ns = ", ".join(sorted(namespaces.get(kind, {kind.namespace})))
        if kind.security is not None:
            ns += f" ({kind.security.level})"
        after = (
            ", ".join(sorted({k.name for k in kind.after} | {f"before {k.name}" for k in kind.before})) or "-"
        )
        clusters = [", ".join(sorted(where.get(kind, {}).get(v, ()))) or "-" for v in site.variants]
        rows.append(
            f"| [`{name}`](../{_module(kind)}) | {kind.project.name} | {kind.layer.name.lower()} | {source} | {ns} "
            f"| {after} | " + " | ".join(clusters) + " |"
        )
    return "\n".join(rows) + "\n"
