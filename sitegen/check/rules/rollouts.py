"""Rollout rules: an ApplicationSet's RollingSync orders every app it generates, and the Argo CD that
runs it has progressive syncs on (check/bringup/rollout.py models the same controller)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sitegen.check.appsets import ExpandedApp
from sitegen.check.bringup.rollout import PROGRESSIVE_SYNCS, progressive_syncs_enabled, step_of
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.tree import Document


def _rolling(ctx: Context) -> Iterator[tuple[Document, list[list[dict[str, Any]]], list[ExpandedApp]]]:
    """Each RollingSync ApplicationSet, its steps' matchExpressions and the apps it generates."""
    for doc in ctx.docs:
        if doc.group != "argoproj.io" or doc.kind != "ApplicationSet":
            continue
        strategy = (doc.body.get("spec") or {}).get("strategy") or {}
        if strategy.get("type") != "RollingSync":
            continue
        steps = [
            list(s.get("matchExpressions") or [])
            for s in (strategy.get("rollingSync") or {}).get("steps") or []
        ]
        yield doc, steps, [a for a in ctx.apps if a.source is doc]


@rule(
    "APP-010",
    "rollout-steps",
    "an app in no RollingSync step is never synced; a step selecting no app is stale",
)
def _rollout_steps(ctx: Context) -> Iterator[Violation]:
    for doc, steps, apps in _rolling(ctx):
        placed = {app.name: step_of(steps, app.body["metadata"].get("labels") or {}) for app in apps}
        for app in apps:
            if placed[app.name] < 0:
                labels = app.body["metadata"].get("labels") or {}
                yield Violation(
                    doc, f"{app.element_path} -> {app.name}.metadata.labels",
                    f"matches no step of the RollingSync (labels {labels}): the controller never syncs it",
                )  # fmt: skip
        for index in range(len(steps)):
            if index not in placed.values():
                yield Violation(
                    doc, f"$.spec.strategy.rollingSync.steps[{index}]",
                    "selects no generated Application: the apps meant for it are in another step or in none",
                )  # fmt: skip


@rule("APP-011", "progressive-syncs", "without progressive syncs Argo CD ignores RollingSync: nothing syncs")
def _progressive_syncs(ctx: Context) -> Iterator[Violation]:
    for doc, _, _ in _rolling(ctx):
        params = [
            d for d in ctx.docs
            if d.variant == doc.variant and d.kind == "ConfigMap" and d.name == "argocd-cmd-params-cm"
        ]  # fmt: skip
        if not any(progressive_syncs_enabled(p.body.get("data") or {}) for p in params):
            yield Violation(
                doc, "$.spec.strategy",
                f"RollingSync, but Argo CD's argocd-cmd-params-cm does not set {PROGRESSIVE_SYNCS}: \"true\"",
            )  # fmt: skip
