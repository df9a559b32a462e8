"""`sitegen apps`: the Applications of every variant as a table, with the Application checks."""

from __future__ import annotations

from pathlib import Path

from sitegen.appsets import applications
from sitegen.layout import resolve
from sitegen.model import Site
from sitegen.plan import _table
from sitegen.policy import RULES, Context
from sitegen.tree import load_tree

APPLICATION_RULES = ("APP-", "PIN-002")


def inventory(dist: Path, site: Site) -> tuple[str, list[str]]:
    docs = load_tree(dist)
    apps, errors = applications(docs)
    layouts = {v: resolve(site, v) for v in site.variants}
    rows = []
    for app in sorted(apps, key=lambda a: (a.source.variant, int(a.wave), a.name)):
        layout = layouts.get(app.source.variant)
        server, namespace = app.destination
        cluster = (
            next((c.name for c in layout.clusters if layout.server(c) == server), server)
            if layout
            else server
        )
        chart = next((s for s in app.sources if "chart" in s), None)
        source = (
            f"{chart['chart']} {chart['targetRevision']} ({chart['repoURL']})"
            if chart
            else app.sources[0]["path"]
        )
        rows.append([app.source.variant, cluster, app.name, app.project, namespace, app.wave, source])
    table = "\n".join(
        _table(["variant", "cluster", "application", "project", "namespace", "wave", "source"], rows)
    )
    context = Context(docs=docs, layouts=layouts, root=dist, apps=apps, expand_errors=errors)
    problems = [
        f"{v.doc.file} [doc {v.doc.index}] {v.doc.ref}: {r.id} {r.name}: {v.path}: {v.message}"
        for r in RULES
        if r.id.startswith(APPLICATION_RULES)
        for v in r.check(context)
    ]
    summary = f"{len(apps)} applications in {len(layouts)} variants; {len(problems)} problems"
    return table + "\n" + summary, problems
