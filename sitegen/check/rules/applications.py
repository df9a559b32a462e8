"""Application rules: what the ApplicationSets expand to exists, deploys where declared, and stays
inside its project."""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from constructs.argocd import NAMED_CLUSTER_KINDS
from sitegen.check.appsets import ExpandedApp
from sitegen.check.project_policy import destination_permitted, kind_permitted
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.model import paths
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


def _tree_path(ctx: Context, repo_path: str) -> Path | None:
    """Argo CD paths are repository paths; dist/ sits at the repository root."""
    rel = paths.from_repo(repo_path)
    return ctx.root / rel if rel is not None else None


def _at(app: ExpandedApp, detail: str) -> str:
    return f"{app.element_path} -> {app.name}{detail}"


@rule("APP-000", "appsets-expand", "an ApplicationSet that cannot be expanded offline cannot be reviewed")
def _appsets_expand(ctx: Context) -> Iterator[Violation]:
    for doc, error in ctx.expand_errors:
        yield Violation(doc, error.path, error.message)


@rule(
    "APP-001",
    "source-paths",
    "an Application pointing at a missing folder syncs nothing, or prunes everything",
)
def _source_paths(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        for i, source in enumerate(app.sources):
            if "path" not in source:
                continue
            folder = _tree_path(ctx, str(source["path"]))
            if folder is None or not folder.is_dir() or not any(folder.rglob("*.yaml")):
                yield Violation(
                    app.source, _at(app, f".sources[{i}].path"), f"{source['path']} holds no YAML"
                )


@rule("APP-002", "values-files", "a missing $values file silently installs a chart with its defaults")
def _values_files(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        refs = {s.get("ref") for s in app.sources if s.get("ref")}
        for i, source in enumerate(app.sources):
            for j, value_file in enumerate((dig(source, "helm", "valueFiles")) or []):
                where = _at(app, f".sources[{i}].helm.valueFiles[{j}]")
                ref, _, rest = str(value_file).partition("/")
                if not ref.startswith("$") or ref[1:] not in refs:
                    yield Violation(app.source, where, f"{value_file} names no `ref` source")
                    continue
                target = _tree_path(ctx, rest)
                if target is None or not target.is_file():
                    yield Violation(app.source, where, f"{rest} does not exist")


@rule(
    "APP-003",
    "destinations",
    "an Application for an undeclared cluster deploys nowhere or somewhere unintended",
)
def _destinations(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        layout = ctx.layouts.get(app.source.variant)
        servers = {layout.server(c) for c in layout.clusters} if layout else set()
        server, _ = app.destination
        if server not in servers:
            yield Violation(
                app.source, _at(app, ".destination.server"), f"{server} is no cluster of this variant"
            )


def _projects(ctx: Context) -> dict[tuple[str, str], dict[str, Any]]:
    """Every AppProject's spec by (variant, name)."""
    return {
        (d.variant, d.name): d.body.get("spec") or {}
        for d in ctx.docs
        if d.kind == "AppProject" and d.group == "argoproj.io"
    }


def _rendered_under(ctx: Context, app: ExpandedApp) -> Iterator[Document]:
    for source in app.sources:
        folder = _tree_path(ctx, str(source.get("path", ""))) if "path" in source else None
        if folder is None:
            continue
        yield from ctx.docs_under(folder.relative_to(ctx.root).as_posix())


@rule(
    "APP-004",
    "project-admits",
    "every Application stays inside its project: repositories, destinations, kinds",
)
def _project_admits(ctx: Context) -> Iterator[Violation]:
    projects = _projects(ctx)
    for app in ctx.apps:
        project = projects.get((app.source.variant, app.project))
        if project is None:
            yield Violation(app.source, _at(app, ".project"), f"project {app.project!r} is not declared")
            continue
        for i, source in enumerate(app.sources):
            repo = str(source.get("repoURL", ""))
            if not any(
                fnmatchcase(repo, p) for p in project.get("sourceRepos") or [] if not p.startswith("!")
            ):
                yield Violation(
                    app.source,
                    _at(app, f".sources[{i}].repoURL"),
                    f"{repo} not in {app.project}'s sourceRepos",
                )
        server, namespace = app.destination
        if not destination_permitted(project, server, namespace):
            yield Violation(
                app.source,
                _at(app, ".destination"),
                f"{server} {namespace} not in {app.project}'s destinations",
            )
        refused: dict[tuple[str, str], list[Document]] = {}
        for doc in _rendered_under(ctx, app):
            if doc.namespace and not destination_permitted(project, server, doc.namespace):
                yield Violation(
                    doc,
                    "$.metadata.namespace",
                    f"namespace {doc.namespace} not in {app.project}'s destinations",
                )
            if not kind_permitted(
                project, doc.group, doc.kind, namespaced=bool(doc.namespace), name=doc.name
            ):
                refused.setdefault((doc.group, doc.kind), []).append(doc)
        for (group, kind), docs in sorted(refused.items()):
            scope = "namespaced" if docs[0].namespace else "cluster-scoped"
            yield Violation(
                app.source,
                _at(app, ".project"),
                f"{app.project} does not admit {scope} {group or 'core'}/{kind} "
                f"({len(docs)} objects, e.g. {docs[0].file})",
            )


@rule(
    "APP-005",
    "project-least-privilege",
    "a project admits only the kinds its apps render: a ClusterRoleBinding it does not ship is cluster-admin for the taking",
)
def _project_least_privilege(ctx: Context) -> Iterator[Violation]:
    rendered: dict[tuple[str, str], set[tuple[str, str, bool, str]]] = {}
    for app in ctx.apps:
        found = rendered.setdefault((app.source.variant, app.project), set())
        found.update((d.group, d.kind, bool(d.namespace), d.name) for d in _rendered_under(ctx, app))
    for doc in ctx.docs:
        if doc.group != "argoproj.io" or doc.kind != "AppProject" or doc.name in ("default", "bootstrap"):
            continue
        shipped = rendered.get((doc.variant, doc.name), set())
        spec = doc.body.get("spec") or {}
        for field, namespaced in (("clusterResourceWhitelist", False), ("namespaceResourceWhitelist", True)):
            scope = "namespaced" if namespaced else "cluster-scoped"
            for i, entry in enumerate(spec.get(field) or []):
                group, kind, name = entry.get("group", ""), entry.get("kind", ""), entry.get("name", "")
                if not namespaced and not name and (group, kind) in NAMED_CLUSTER_KINDS:
                    yield Violation(doc, f"$.spec.{field}[{i}]", f"admits every {group}/{kind}: a project may "
                                    "create these (they grant rights or intercept requests) only by name")  # fmt: skip
                if not any(
                    fnmatchcase(g, group) and fnmatchcase(k, kind) and n == namespaced
                    and (not name or fnmatchcase(o, name))
                    for g, k, n, o in shipped
                ):  # fmt: skip
                    what = f"{group}/{kind}" + (f" {name}" if name else "")
                    yield Violation(
                        doc, f"$.spec.{field}[{i}]", f"admits {scope} {what}, which none of its apps render"
                    )
