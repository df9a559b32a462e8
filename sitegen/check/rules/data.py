"""Every volume that holds state says how it comes back: each stateful volume of the tree (check/
volumes.py, charts' included) must be one a component of its app states (Component.state: its class,
its copies or why it needs none), each stated workload must still have its volume (DATA-001), and
state, which has no other source, must have a copy (DATA-002)."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.volumes import Volume, volumes_of
from sitegen.components.base import Component, State
from sitegen.compose.apps import variant_apps
from sitegen.tree.documents import Document

Stated = tuple[str, str, Component, list[Volume], dict[str, State]]  # variant, cluster, ...


def _stated(ctx: Context) -> tuple[list[Stated], list[Volume]]:
    """Per component of each variant's clusters: its volumes in the tree and its states; and the
    volumes of no component's app."""
    found: dict[tuple[str, str, str], list[Volume]] = {}
    for doc in ctx.docs:
        for volume in volumes_of(doc):
            found.setdefault((doc.variant, doc.cluster or "", volume.app), []).append(volume)
    stated: list[Stated] = []
    if ctx.site is not None:
        for variant, layout in sorted(ctx.layouts.items()):
            for cluster_ctx in variant_apps(ctx.site, layout).contexts:
                name = cluster_ctx.cluster.name
                for component in cluster_ctx.components:
                    volumes = found.pop((variant, name, component.name), [])
                    states = {s.workload: s for s in component.state(cluster_ctx)}
                    stated.append((variant, name, component, volumes, states))
    return stated, [v for _, volumes in sorted(found.items(), key=lambda kv: kv[0]) for v in volumes]


def _anchor(ctx: Context, variant: str) -> Document | None:
    return next((d for d in ctx.docs if d.variant == variant), None)


@rule(
    "DATA-001",
    "stated-volumes",
    "a volume nobody stated is found without a copy the day its node dies: each stateful volume is "
    "stated by its component, with its class and its copies or why it needs none",
)
def _stated_volumes(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    stated, orphans = _stated(ctx)
    for variant, cluster, component, volumes, states in stated:
        for volume in volumes:
            if volume.workload not in states:
                yield Violation(volume.doc, "$.spec", f"volume {volume.claim} of {volume.workload} "
                                f"({volume.storage_class or 'default class'}, {volume.count} x {volume.size}) "
                                f"is stated by no component of {component.name}: state what it holds and "
                                "its copies, or why it needs none")  # fmt: skip
        for missing in sorted(set(states) - {v.workload for v in volumes}):
            anchor = _anchor(ctx, variant)
            if anchor is not None:
                yield Violation(anchor, "$", f"{component.name} states the volumes of {missing} in "
                                f"cluster {cluster}, which has none: drop the state")  # fmt: skip
    for volume in orphans:
        yield Violation(volume.doc, "$.spec", f"volume {volume.claim} of {volume.workload} belongs to no "
                        f"component's app ({volume.app}): state what it holds and its copies")  # fmt: skip


@rule(
    "DATA-002",
    "state-has-a-copy",
    "state has no other source: a volume of it with no copy is lost with its node, its drive or its "
    "array; caches, metrics and logs may go",
)
def _state_has_a_copy(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    stated, _ = _stated(ctx)
    for _, _, _, volumes, states in stated:
        for volume in volumes:
            state = states.get(volume.workload)
            if state is not None and state.data == "state" and not state.copies:
                yield Violation(volume.doc, "$.spec", f"{volume.workload} holds state ({state.holds}) "
                                f"with no copy: {state.without_copy}")  # fmt: skip
