"""Delivery rules: what Argo CD does with the Applications of dist/ on day 2, as v3.4.7 runs them.

Every Application heals drift and prunes by itself; no ApplicationSet rolls out (RollingSync turns
automated sync off on what it generates, and then any app that is not Healthy holds every later step
on every commit); each set is waited on through a health check that reads its Applications; and
nothing a rename or a prune could delete takes data or hooks with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from sitegen.check.bringup.health import CUSTOMIZATION, LuaHealthError, run_health_script
from sitegen.check.rules.applications import _at
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.compose.ownership import (
    KEEP_ON_DELETE,
    SYNC_OPTIONS,
    keeps_data,
    runs_in_no_sync,
    runs_on_delete,
)
from sitegen.model import paths
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

APPSET_HEALTH = f"{CUSTOMIZATION}argoproj.io_ApplicationSet"


@rule(
    "APP-010",
    "self-heal",
    "an Application that does not sync, prune and heal by itself leaves drift of the guard rails until someone syncs",
)
def _self_heal(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        policy = app.spec.get("syncPolicy") or {}
        automated = policy.get("automated")
        missing = [
            what
            for what, ok in (
                ("automated sync", automated is not None and automated.get("enabled", True) is not False),
                ("prune", bool(dig(automated, "prune"))),
                ("selfHeal", bool(dig(automated, "selfHeal"))),
                ("a retry", bool(policy.get("retry"))),
            )
            if not ok
        ]
        if missing:
            yield Violation(app.source, _at(app, ".spec.syncPolicy"), f"has no {', no '.join(missing)}")


@rule(
    "APP-011",
    "no-rolling-sync",
    "RollingSync turns self-heal off and holds every later step behind any app not Healthy, on every commit",
)
def _no_rolling_sync(ctx: Context) -> Iterator[Violation]:
    for doc in _appsets(ctx):
        strategy = dig(doc.body, "spec", "strategy")
        if strategy:
            yield Violation(
                doc, "$.spec.strategy",
                f"{strategy.get('type', 'a strategy')}: the controller turns automated sync off on the apps it "
                "generates (v3.4.7 and v3.5.1 progressive_sync.go), so nothing heals, and a step waits on "
                "every app of the steps before it whenever any commit moves their revision",
            )  # fmt: skip


def _appsets(ctx: Context) -> Iterator[Document]:
    yield from (d for d in ctx.docs if d.group == "argoproj.io" and d.kind == "ApplicationSet")


_WAITS = ("Progressing", "Degraded")  # a root's sync waits on (or fails) the wave, never goes past it
# The statuses an ApplicationSet controller writes, and what the roots must read of each.
_CASES: tuple[tuple[str, dict[str, Any], tuple[str, ...]], ...] = (
    ("before the controller wrote a status", {}, _WAITS),
    (
        "while one of its apps is Progressing",
        {"resources": [
            {"name": "a", "status": "Synced", "health": {"status": "Healthy"}},
            {"name": "b", "status": "Synced", "health": {"status": "Progressing"}},
        ]},
        _WAITS,
    ),
    (
        "while one of its apps is OutOfSync",
        {"resources": [{"name": "a", "status": "OutOfSync", "health": {"status": "Healthy"}}]},
        _WAITS,
    ),
    (
        "when it cannot generate its apps",
        {"conditions": [{"type": "ErrorOccurred", "status": "True", "message": "cluster not found"}]},
        _WAITS,
    ),
    (
        "once every app is Synced and Healthy",
        {
            "conditions": [{"type": "ResourcesUpToDate", "status": "True"}],
            "resources": [{"name": "a", "status": "Synced", "health": {"status": "Healthy"}}],
        },
        ("Healthy",),
    ),
)  # fmt: skip


@rule(
    "APP-012",
    "appset-health",
    "a root waits on an ApplicationSet only through a health check that reads its apps: the built-in one is Healthy once they exist",
)
def _appset_health(ctx: Context) -> Iterator[Violation]:
    variants = {d.variant for d in _appsets(ctx)}
    for variant in sorted(variants):
        maps = [
            d for d in ctx.docs
            if d.variant == variant and d.kind == "ConfigMap" and d.name == "argocd-cm"
        ]  # fmt: skip
        if not maps:
            continue
        doc = maps[0]
        script = dig(doc.body, "data", APPSET_HEALTH)
        if not script:
            yield Violation(
                doc, f"$.data['{APPSET_HEALTH}']", "missing: the roots would not wait on the sets' apps"
            )
            continue
        for what, status, expected in _CASES:
            body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "x"}}
            try:
                found, _ = run_health_script(script, {**body, "status": status} if status else body)
            except LuaHealthError as error:
                yield Violation(doc, f"$.data['{APPSET_HEALTH}']", f"{what}: {error}")
                continue
            if found not in expected:
                yield Violation(
                    doc, f"$.data['{APPSET_HEALTH}']", f"reports {found} {what} (expected {expected[0]})"
                )


@rule(
    "APP-013",
    "deletion-guard",
    "a rename, a removed element or a prune must not delete data, CRDs with every custom resource, or run destroy hooks",
)
def _deletion_guard(ctx: Context) -> Iterator[Violation]:
    for doc in _appsets(ctx):
        policy = dig(doc.body, "spec", "syncPolicy") or {}
        if not policy.get("preserveResourcesOnDeletion") and policy.get("applicationsSync") not in (
            "create-only",
            "create-update",
        ):
            yield Violation(
                doc, "$.spec.syncPolicy",
                "deleting a generated Application (its element gone, the set renamed) would delete every object "
                "it synced: set preserveResourcesOnDeletion",
            )  # fmt: skip
    for doc in ctx.docs:
        if doc.area != "apps":
            continue
        if runs_in_no_sync(doc.body) or runs_on_delete(doc.body):
            yield Violation(
                doc, "$.metadata.annotations",
                "a delete hook: Argo CD runs it when the Application is deleted (controller/hook.go), and no sync "
                "runs it",
            )  # fmt: skip
        elif keeps_data(doc.body):
            annotations = dig(doc.body, "metadata", "annotations") or {}
            options = {o.strip() for o in str(annotations.get(SYNC_OPTIONS, "")).split(",")}
            if not set(KEEP_ON_DELETE) <= options:
                yield Violation(
                    doc, f"$.metadata.annotations['{SYNC_OPTIONS}']",
                    f"{doc.kind} without {','.join(KEEP_ON_DELETE)}: a prune or a cascaded deletion loses what it "
                    "holds",
                )  # fmt: skip


@rule(
    "APP-014",
    "every-element-generated",
    "an app's element that no ApplicationSet selects (a wave without its set) is never deployed; two would fight over it",
)
def _every_element_generated(ctx: Context) -> Iterator[Violation]:
    counts: dict[str, int] = {}
    for app in ctx.apps:
        _, _, element = app.element_path.partition(":")
        if element:
            counts[element] = counts.get(element, 0) + 1
    sets = {d.variant: d for d in _appsets(ctx)}
    for variant, doc in sorted(sets.items()):
        for path in sorted((ctx.root / variant).glob(f"{paths.APPS}/*/*/{paths.APP_DESCRIPTOR}")):
            repo_path = str(paths.in_repo(PurePosixPath(path.relative_to(ctx.root).as_posix())))
            found = counts.get(repo_path, 0)
            if found != 1:
                yield Violation(
                    doc, "$.spec.generators",
                    f"{repo_path} is generated by {found} ApplicationSets of {variant}: "
                    f"{'its app is never created' if not found else 'they would fight over its Application'}",
                )  # fmt: skip


@rule(
    "APP-015",
    "literal-project",
    "a templated project lets whoever writes the generator's files pick the project, and Argo CD then verifies no commit signature",
)
def _literal_project(ctx: Context) -> Iterator[Violation]:
    # Argo CD v3.4 applicationset/generators/git.go: signature verification reads the set's own
    # template project, and only when it holds no `{{`
    for doc in _appsets(ctx):
        project = str(dig(doc.body, "spec", "template", "spec", "project", default=""))
        generators = dig(doc.body, "spec", "generators") or []
        overridden = [
            i for i, g in enumerate(generators)
            for kind in g.values()
            if isinstance(kind, dict) and dig(kind, "template", "spec", "project") is not None
        ]  # fmt: skip
        if "{{" in project or not project:
            yield Violation(
                doc, "$.spec.template.spec.project",
                f"{project or 'no project'}: name the project in the set, and each app's folder in its generator",
            )  # fmt: skip
        for i in overridden:
            yield Violation(
                doc, f"$.spec.generators[{i}].template.spec.project",
                "a generator's own project: Argo CD verifies signatures against the set's template project only",
            )  # fmt: skip
