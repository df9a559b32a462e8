"""`sitegen apps`: the Applications of every variant as a table, with the Application checks."""

from __future__ import annotations

from pathlib import Path

from sitegen.check.allowlists import allow_lists
from sitegen.check.appsets import applications
from sitegen.check.rules import RULES, Context
from sitegen.check.tree import load_tree
from sitegen.model import Site, resolve
from sitegen.report.table import table

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
    text = "\n".join(
        table(["variant", "cluster", "application", "project", "namespace", "wave", "source"], rows)
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
    summary = f"{len(apps)} applications in {len(layouts)} variants; {len(problems)} problems"
    return text + "\n" + summary, problems
