"""`sitegen apps`: the Applications of every variant as a table, with the Application checks."""

from __future__ import annotations

import json
from pathlib import Path

from constructs.argocd import ROOT, application_name
from sitegen.check.allowlists import allow_lists
from sitegen.check.appsets import ExpandedApp, applications, dist_files
from sitegen.check.rules import RULES, Context
from sitegen.compose.apps import variant_apps
from sitegen.model import Site, paths, resolve
from sitegen.report.table import table
from sitegen.tree.documents import load_tree

APPLICATION_RULES = ("APP-", "PIN-002")


HEADERS = [
    "variant",
    "cluster",
    "application",
    "made by",
    "project",
    "namespace",
    "wave",
    "rendered from",
    "source",
]


def inventory(dist: Path, site: Site, *, as_json: bool = False) -> tuple[str, list[str]]:
    docs = load_tree(dist)
    apps, errors = applications(docs, dist_files(dist))
    layouts = {v: resolve(site, v) for v in site.variants}
    rendered_from = {
        (variant, application_name(cluster, app.name)): site.versions.charts[app.chart_key]
        for variant, layout in layouts.items()
        for cluster, cluster_apps in variant_apps(site, layout).by_cluster.items()
        for app in cluster_apps
        if app.chart_key
    }
    # a spoke's apps install within its root, at that root's wave in the hub's: list them there
    nested = {
        (a.source.variant, str(a.sources[0].get("path", ""))): int(a.wave)
        for a in apps
        if a.source.kind == "Application" and a.name.startswith(f"{ROOT}-")
    }

    def position(app: ExpandedApp) -> tuple[str, int, int, str]:
        folder = f"{paths.REPO_DIST}/{app.source.file.parent}"
        outer = nested.get((app.source.variant, folder))
        return (
            app.source.variant,
            int(app.wave) if outer is None else outer,
            -1 if outer is None else int(app.wave),
            app.name,
        )

    rows = []
    for app in sorted(apps, key=position):
        layout = layouts.get(app.source.variant)
        server, namespace = app.destination
        cluster = (
            next((c.name for c in layout.clusters if layout.server(c) == server), server)
            if layout
            else server
        )
        source = ", ".join(str(s.get("path") or s.get("chart")) for s in app.sources)
        pin = rendered_from.get((app.source.variant, app.name))
        chart = f"{pin.chart} {pin.version}" if pin else "-"
        owner = (
            f"appset/{app.source.name}"
            if app.source.kind == "ApplicationSet"
            else "runbook"
            if app.name == "root"
            else "root"
        )
        rows.append(
            [app.source.variant, cluster, app.name, owner, app.project, namespace, app.wave, chart, source]
        )
    # text: one table per variant, without the cluster (each name starts with it) and the source paths
    # (JSON keeps every column), to fit a terminal
    text = "\n\n".join(
        "\n".join([variant, *table(HEADERS[2:-1], [row[2:-1] for row in rows if row[0] == variant])])
        for variant in sorted({row[0] for row in rows})
    )
    context = Context(
        docs=docs, layouts=layouts, allow=allow_lists(site), root=dist, apps=apps, expand_errors=errors
    )
    problems = [
        f"{v.doc.file} [doc {v.doc.index}] {v.doc.ref}: {r.id} {r.name}: {v.path}: {v.message}"
        for r in RULES
        if r.id.startswith(APPLICATION_RULES)
        for v in r.check(context)
    ]
    if as_json:
        keys = [h.replace(" ", "_") for h in HEADERS]
        return json.dumps([dict(zip(keys, row, strict=True)) for row in rows], indent=2), problems
    summary = f"{len(apps)} applications in {len(layouts)} variants; {len(problems)} problems"
    return text + "\n" + summary, problems
