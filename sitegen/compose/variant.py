"""Synthesis of the variants: every component of every cluster rendered (cdk8s) or hydrated (its
chart rendered with the values it builds), the host files, the bootstrap, the runbook and the
containerd mirrors, as output files in a stable order."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from cdk8s import App

from constructs.objects import WEBHOOK_KINDS, WORKLOAD_KINDS
from sitegen.components.base import ChartComponent, Component, RenderedComponent
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext
from sitegen.compose import chart_values
from sitegen.compose.ansible import ansible_files
from sitegen.compose.apps import CompositionError, VariantApps, variant_apps
from sitegen.compose.chart_supply import Archive, ChartStore
from sitegen.compose.charts import ObjectChart
from sitegen.compose.delivery import ACCESS_APP, bootstrap
from sitegen.compose.fabric_hosts import fabric_files
from sitegen.compose.host_baseline import baseline_files
from sitegen.compose.hosts import etcd_patches, host_files, mirror_files
from sitegen.compose.hydrate import Progress, Rendered, RenderedObject, RenderJob, hydrating
from sitegen.compose.local_cache import cache_files
from sitegen.compose.ownership import ALL_WRITES
from sitegen.compose.patches import Patches
from sitegen.compose.procedures.second_target import buckets as second_buckets
from sitegen.compose.procedures.second_target import lifecycle_text, second_consumers
from sitegen.compose.runbook import runbook, s3_consumers
from sitegen.compose.writer import OutputFile
from sitegen.model import ConfigError, Site, paths, resolve
from sitegen.model.extensions import ObjectPatch, merged
from sitegen.tree.fields import dig

BINDING_KINDS = ("ClusterRoleBinding", "RoleBinding")
WRITTEN_KINDS = frozenset(w.kind for w in ALL_WRITES) - {"CustomResourceDefinition"}
# whole bodies of the charts' pod templates too: the admission policies read who reaches the nodes


def _served_api_versions(ctx: ClusterContext) -> tuple[str, ...]:
    """The API group/versions the cluster serves beyond the built-in ones, once every app has synced."""
    served = {
        v for c in ctx.components if isinstance(c, ChartComponent) for v in (*c.serves, *c.serves_at_runtime)
    }
    return tuple(sorted(served))


def _values_file(apps: VariantApps, cluster: str, component: ChartComponent, document: dict) -> OutputFile:
    pin = apps.site.versions.charts[component.chart]
    header = f"Helm values for chart {pin.chart} {pin.version} ({pin.repo}), app {component.name}: rendered into apps/."
    return OutputFile(paths.values_file(apps.layout.name, cluster, component.name), [document], header)


def _with_overrides(
    site: Site, cluster: str, component: ChartComponent, values: dict[str, Any]
) -> dict[str, Any]:
    """config/extensions.yaml: `values` merged over what the component generates in every cluster, then
    `cluster_values` in this one."""
    for override in (
        site.extensions.values.get(component.name),
        dig(site.extensions.cluster_values, cluster, component.name),
    ):
        if override:
            values = merged(values, override)
    return values


def _check_overrides(site: Site) -> None:
    chart_apps = {kind.name for kind in COMPONENTS if issubclass(kind, ChartComponent)}
    for where, name, _, _ in site.extensions.overrides():
        if name not in chart_apps:
            raise ConfigError(
                where, f"no chart app {name!r} takes values (chart apps: {', '.join(sorted(chart_apps))})"
            )


def _set_paths(values: Mapping[str, Any], path: str = "") -> Iterator[str]:
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        yield here
        if isinstance(value, dict):
            yield from _set_paths(value, here)


def _check_override_keys(site: Site, archives: Mapping[str, Archive]) -> None:
    """An override's keys, judged where they are written (config/extensions.yaml): one the model
    sets from config/ is refused, naming that field; one the pinned chart neither declares nor reads
    (a typo) is refused as VAL-001 would judge the rendered values."""
    kinds = {kind.name: kind for kind in COMPONENTS if issubclass(kind, ChartComponent)}
    for where, name, _, override in site.extensions.overrides():
        kind = kinds[name]
        for path in _set_paths(override):
            field = kind.modelled_values.get(path)
            if field is not None:
                raise ConfigError(
                    (*where, *path.split(".")),
                    f"the site model sets it from {field}: change it there, not here",
                )
        if kind.chart in archives:
            problems = chart_values.values_problems(
                kind.chart, chart_values.chart_keys(archives[kind.chart].path), override
            )
            for path, problem in problems[:1]:
                raise ConfigError((*where, *path.split(".")), problem)


def _chart_jobs(
    apps: VariantApps, archives: Mapping[str, Archive]
) -> tuple[list[OutputFile], list[RenderJob]]:
    """Each chart app's values file, and the `helm template` run that hydrates it."""
    files: list[OutputFile] = []
    jobs: list[RenderJob] = []
    for ctx in apps.contexts:
        api_versions = _served_api_versions(ctx)
        for component in ctx.components:
            if not isinstance(component, ChartComponent):
                continue
            values = _with_overrides(apps.site, ctx.cluster.name, component, component.values(ctx).document())
            files.append(_values_file(apps, ctx.cluster.name, component, values))
            job = RenderJob(
                app=f"{apps.layout.name}/{ctx.cluster.name}/{component.name}",
                release=component.release_name,
                namespace=component.namespace,
                archive=str(archives[component.chart].path),
                archive_sha256=archives[component.chart].sha256,
                values=values,
                kube_version=apps.site.versions.kubernetes,
                api_versions=api_versions,
                folder=str(paths.app_dir(apps.layout.name, ctx.cluster.name, component.name)),
                patches=tuple(component.patches(ctx)),
                include_crds=component.renders_crds,
                writes=ALL_WRITES,
            )
            jobs.append(job)
    return files, jobs


def _kept(component: ChartComponent, rendered: Rendered) -> list[RenderedObject]:
    return [o for o in rendered.objects if component.keeps(o.kind, o.name)]


def _check_serves(
    ctx: ClusterContext, component: ChartComponent, rendered: Rendered, kept: list[RenderedObject]
) -> None:
    """The app serves the API versions of the CRDs it ships (all its chart's, or none of them)."""
    ships_crds = any(o.kind == "CustomResourceDefinition" for o in kept)
    served = rendered.serves if ships_crds else ()
    if tuple(sorted(component.serves)) != served:
        raise CompositionError(
            f"cluster {ctx.cluster.name}: {component.name} declares serves {sorted(component.serves)}, its chart "
            f"renders CRDs of {list(served)}"
        )


@dataclasses.dataclass
class _Composed:
    """What a variant's composition needs no chart render for: the cdk8s charts of the components
    that read no other app's objects, and the host files."""

    charts: dict[tuple[str, str], ObjectChart]
    files: list[OutputFile]


def _reads_rendered(component: Component) -> bool:
    return isinstance(component, RenderedComponent) and component.reads_rendered


def _compose_independent(app: App, apps: VariantApps) -> _Composed:
    site, variant = apps.site, apps.layout.name
    composed = _Composed({}, [])
    for ctx in apps.contexts:
        cluster = ctx.cluster.name
        for component in ctx.components:
            if isinstance(component, RenderedComponent) and not component.reads_rendered:
                folder = paths.app_dir(variant, cluster, component.name)
                chart = ObjectChart(app, f"{variant}-{cluster}-{component.name}", folder=folder)
                component.render(chart, ctx)
                chart.synthesize()  # while the charts render in the background
                composed.charts[(cluster, component.name)] = chart
        composed.files += host_files(app, site, variant, ctx.cluster).output_files()
        composed.files += fabric_files(site, variant, ctx.cluster)
        composed.files += baseline_files(site, variant, ctx.cluster)
        composed.files += cache_files(site, variant, ctx.cluster)
        composed.files += etcd_patches(variant, ctx.cluster)
    return composed


def _patched_chart(chart: ObjectChart, found: list[tuple[int, ObjectPatch]], patches: Patches) -> None:
    docs = chart.documents  # cached: what the app's files and its readers get
    for i, doc in enumerate(docs):
        new = patches.apply(found, doc)
        if new is not None:
            docs[i] = new


def _patched_render(
    kept: list[RenderedObject], found: list[tuple[int, ObjectPatch]], patches: Patches
) -> list[tuple[RenderedObject, dict[str, Any] | None]]:
    """Each rendered object, with its patched body when a patch names it (parsed only then)."""
    named = {(p.kind, p.name) for _, p in found}
    return [(o, patches.apply(found, o.document()) if (o.kind, o.name) in named else None) for o in kept]


def _variant_files(
    app: App, apps: VariantApps, composed: _Composed, hydrated: Mapping[str, Rendered], patches: Patches
) -> list[OutputFile]:
    """The rest of a variant, once its charts are rendered: the chart apps' objects, the components
    that read other apps' objects (in their order), the bootstrap and the runbook."""
    variant = apps.layout.name
    files = list(composed.files)
    charts: dict[tuple[str, str], ObjectChart] = {}
    documents: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for ctx in apps.contexts:
        cluster = ctx.cluster.name
        for component in render_order(ctx):
            if isinstance(component, RenderedComponent):
                chart = _rendered_chart(app, ctx, component, composed, documents, patches)
                charts[(cluster, component.name)] = chart
                documents[(cluster, component.name)] = chart.documents
            elif isinstance(component, ChartComponent):
                folder = paths.app_dir(variant, cluster, component.name)
                kept, patched = _hydrated_objects(ctx, component, hydrated[str(folder)], patches)
                files += [
                    OutputFile(paths.PurePosixPath(o.path), [patched[o]])
                    if patched.get(o) is not None
                    else OutputFile(paths.PurePosixPath(o.path), [], text=o.text)
                    for o in kept
                ]
                documents[(cluster, component.name)] = _read_documents(kept, patched)
    root, spoke_roots, access = _bootstrap_charts(app, apps)
    delivery = bootstrap(root, spoke_roots, access, apps, documents)
    for chart in [*charts.values(), access, root, *spoke_roots.values()]:
        files += chart.output_files()
    files += [
        OutputFile(path, [], text=json.dumps(element, indent=2, sort_keys=True) + "\n")
        for path, element in sorted(delivery.descriptors.items())
    ]
    files.append(_runbook_file(apps, charts, [root, access, *spoke_roots.values()]))
    files += _bucket_files(apps)
    files += mirror_files(apps.site, variant)
    files += ansible_files(apps.site, apps.layout)
    return files


def render_order(ctx: ClusterContext) -> list[Component]:
    """The order a cluster's apps are rendered in: those that read other apps' objects after the rest
    (those that read the readers' last), each reading what every app before it rendered."""
    readers = sorted(
        (c for c in ctx.components if _reads_rendered(c)),
        key=lambda c: c.reads_readers,  # type: ignore[attr-defined]
    )
    return [*(c for c in ctx.components if c not in readers), *readers]


def _rendered_chart(
    app: App,
    ctx: ClusterContext,
    component: RenderedComponent,
    composed: _Composed,
    documents: Mapping[tuple[str, str], list[dict[str, Any]]],
    patches: Patches,
) -> ObjectChart:
    """A cdk8s app's chart, patched: composed already, or rendered now from what the cluster's apps
    before it rendered."""
    variant, cluster = ctx.variant.name, ctx.cluster.name
    chart = composed.charts.get((cluster, component.name))
    if chart is None:
        folder = paths.app_dir(variant, cluster, component.name)
        chart = ObjectChart(app, f"{variant}-{cluster}-{component.name}", folder=folder)
        rendered = {name: docs for (c, name), docs in documents.items() if c == cluster}
        component.render(chart, dataclasses.replace(ctx, rendered=rendered))
    found = patches.for_app(cluster, component.name)
    if found:
        _patched_chart(chart, found, patches)
    return chart


def _hydrated_objects(
    ctx: ClusterContext, component: ChartComponent, rendered: Rendered, patches: Patches
) -> tuple[list[RenderedObject], dict[RenderedObject, dict[str, Any] | None]]:
    """A chart app's objects it keeps, and the patched body of each a patch names."""
    kept = _kept(component, rendered)
    _check_serves(ctx, component, rendered, kept)
    found = patches.for_app(ctx.cluster.name, component.name)
    return kept, dict(_patched_render(kept, found, patches)) if found else {}


def _read_documents(
    kept: list[RenderedObject], patched: Mapping[RenderedObject, dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """What the apps that read a chart app's objects get of them."""
    # identities only (the CRDs are large), but the bodies of what the network policies
    # read (the Services the API server calls) and of the bindings (a spoke's manager may
    # bind only the roles they name), of the workloads, and of what a controller writes
    # into (its app ignores the field; a CRD's conversion is left to the bring-up check)
    return [
        patched[o]  # type: ignore[misc]
        if patched.get(o) is not None
        else o.document()
        if o.kind in WEBHOOK_KINDS
        or o.kind in BINDING_KINDS
        or o.kind in WORKLOAD_KINDS
        or o.kind in WRITTEN_KINDS
        else o.metadata_document()
        for o in kept
    ]


def _bootstrap_charts(app: App, apps: VariantApps) -> tuple[ObjectChart, dict[str, ObjectChart], ObjectChart]:
    """The charts the bootstrap fills: the hub's root, each spoke's root and the access app's."""
    variant = apps.layout.name
    root = ObjectChart(app, f"{variant}-bootstrap", folder=paths.bootstrap_dir(variant))
    spoke_roots = {
        s.name: ObjectChart(
            app, f"{variant}-bootstrap-{s.name}", folder=paths.cluster_root_dir(variant, s.name, hub=False)
        )
        for s in apps.layout.spokes
    }
    hub = apps.layout.hub.name
    access = ObjectChart(app, f"{variant}-{hub}-{ACCESS_APP}", folder=paths.app_dir(variant, hub, ACCESS_APP))
    return root, spoke_roots, access


def _runbook_file(
    apps: VariantApps, charts: Mapping[tuple[str, str], ObjectChart], bootstrap_charts: list[ObjectChart]
) -> OutputFile:
    """The RUNBOOK, from every cluster's objects."""
    ours: dict[str, list[dict[str, Any]]] = {c.name: [] for c in apps.layout.clusters}
    for (cluster, _), chart in charts.items():
        ours[cluster] += chart.documents
    # the bootstrap objects live on the hub
    ours[apps.layout.hub.name] += [d for chart in bootstrap_charts for d in chart.documents]
    return OutputFile(paths.bootstrap_dir(apps.layout.name) / paths.RUNBOOK, [], text=runbook(apps, ours))


def _bucket_files(apps: VariantApps) -> list[OutputFile]:
    """Each S3 consumer's policy, then each second-target bucket's lifecycle."""
    variant = apps.layout.name
    files = [
        OutputFile(
            paths.s3_policy_file(variant, access.user), [], text=json.dumps(access.policy(), indent=2) + "\n"
        )
        for access in s3_consumers(apps)
    ]
    second = second_consumers(apps)
    lock_days = apps.site.services.backups.second.lock_days
    files += [
        OutputFile(paths.lifecycle_file(variant, bucket), [], text=lifecycle_text(second, bucket, lock_days))
        for bucket in second_buckets(second)
    ]
    return files


def _used_charts(every: list[VariantApps]) -> list[str]:
    return sorted({c.chart for apps in every for _, c in apps.members() if isinstance(c, ChartComponent)})


def chart_keys(site: Site, variants: list[str]) -> list[str]:
    """The versions.yaml chart keys the variants' components use."""
    return _used_charts([variant_apps(site, resolve(site, v)) for v in variants])


def _jobs(site: Site, every: list[VariantApps]) -> tuple[list[OutputFile], list[RenderJob]]:
    archives = ChartStore().supply(site.versions.chart_pins(_used_charts(every)))
    _check_override_keys(site, archives)
    files: list[OutputFile] = []
    jobs: list[RenderJob] = []
    for apps in every:
        values, chart_jobs = _chart_jobs(apps, archives)
        files += values
        jobs += chart_jobs
    return files, jobs


def render_jobs(site: Site, variants: list[str]) -> list[RenderJob]:
    """The `helm template` runs the variants need (for the benchmark's bare-Helm baseline)."""
    return _jobs(site, [variant_apps(site, resolve(site, v)) for v in variants])[1]


def synthesize(
    site: Site, variants: list[str], workers: int | None = None, progress: Progress | None = None
) -> list[OutputFile]:
    """Every output file of the given variants, in a stable order."""
    _check_overrides(site)
    every = [variant_apps(site, resolve(site, v)) for v in variants]
    files, jobs = _jobs(site, every)
    app = App()
    with hydrating(jobs, workers, progress) as rendered:
        # what needs no render is composed while the charts render
        composed = [_compose_independent(app, apps) for apps in every]
        hydrated = rendered()
    patches = Patches(site.extensions.patches)
    for apps, independent in zip(every, composed, strict=True):
        files += _variant_files(app, apps, independent, hydrated, patches)
    patches.check_all_matched()
    _check_service_addresses(site, files)
    return sorted(files, key=lambda f: f.path)


def _takes_cluster_ip(file: OutputFile) -> int:
    if file.text is not None:  # a hydrated object, one per file named <namespace>.<kind>.<name>.yaml
        return int(
            ".service." in file.path.name
            and re.search(r"^kind: Service$", file.text, re.M) is not None
            and re.search(r"^  clusterIP: None$", file.text, re.M) is None
        )
    return sum(
        1 for d in file.documents if d.get("kind") == "Service" and dig(d, "spec", "clusterIP") != "None"
    )


def _check_service_addresses(site: Site, files: list[OutputFile]) -> None:
    """Every Service with a cluster IP needs an address of its cluster's service range."""
    counts: Counter[tuple[str, str]] = Counter()
    for file in files:
        where = paths.DistPath(file.path)
        if where.area == paths.APPS and where.cluster is not None:
            counts[(where.variant, where.cluster)] += _takes_cluster_ip(file)
    for (variant, cluster), services in sorted(counts.items()):
        cidr = site.clusters[cluster].service_cidr
        usable = cidr.num_addresses - 2  # the network address, and the API server's own Service
        if services > usable:
            raise ConfigError(
                ("clusters", cluster, "service_cidr"),
                f"{cidr} gives {usable} Service addresses; variant {variant} creates {services} Services in cluster {cluster}",
            )
