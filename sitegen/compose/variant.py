"""Synthesis of a variant: every component of every cluster rendered or given its values, the host
files, the bootstrap, the runbook and the containerd mirrors, as output files in a stable order."""

from __future__ import annotations

from cdk8s import App

from sitegen.components.base import ChartComponent, RenderedComponent
from sitegen.compose import paths
from sitegen.compose.apps import VariantApps, variant_apps
from sitegen.compose.charts import ObjectChart
from sitegen.compose.delivery import bootstrap
from sitegen.compose.hosts import host_files, mirror_files
from sitegen.compose.runbook import runbook
from sitegen.compose.writer import OutputFile
from sitegen.model import Site, resolve


def _values_file(apps: VariantApps, cluster: str, component: ChartComponent, document: dict) -> OutputFile:
    pin = apps.site.versions.charts[component.chart]
    header = f"Helm values for chart {pin.chart} {pin.version} ({pin.repo}), app {component.name}."
    return OutputFile(paths.values_file(apps.layout.name, cluster, component.name), [document], header)


def variant_files(app: App, site: Site, variant: str) -> list[OutputFile]:
    apps = variant_apps(site, resolve(site, variant))
    files: list[OutputFile] = []
    charts: dict[tuple[str, str], ObjectChart] = {}
    for ctx in apps.contexts:
        cluster = ctx.cluster.name
        for component in ctx.components:
            if isinstance(component, RenderedComponent):
                chart = ObjectChart(
                    app,
                    f"{variant}-{cluster}-{component.name}",
                    folder=paths.app_dir(variant, cluster, component.name),
                )
                component.render(chart, ctx)
                charts[(cluster, component.name)] = chart
            elif isinstance(component, ChartComponent):
                files.append(_values_file(apps, cluster, component, component.values(ctx).document()))
        files += host_files(app, site, variant, ctx.cluster).output_files()
    root = ObjectChart(app, f"{variant}-bootstrap", folder=paths.bootstrap_dir(variant))
    bootstrap(root, apps, {key: chart.documents for key, chart in charts.items()})
    for chart in [*charts.values(), root]:
        files += chart.output_files()
    documents = [doc for chart in [*charts.values(), root] for doc in chart.documents]
    files.append(OutputFile(paths.bootstrap_dir(variant) / paths.RUNBOOK, [], text=runbook(apps, documents)))
    files += mirror_files(site, variant)
    return files


def synthesize(site: Site, variants: list[str]) -> list[OutputFile]:
    """Every output file of the given variants, in a stable order."""
    app = App()
    files = [f for v in variants for f in variant_files(app, site, v)]
    return sorted(files, key=lambda f: f.path)
