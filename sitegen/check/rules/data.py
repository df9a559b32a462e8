"""Every volume that holds state says how it comes back: each stateful volume of the tree (check/
volumes.py, charts' included) must be one a component of its app states (Component.state: its copies,
or why it needs none), and each stated workload must still have its volume."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.volumes import volumes_of
from sitegen.compose.apps import variant_apps


@rule(
    "DATA-001",
    "stated-volumes",
    "a volume nobody stated is found without a copy the day its node dies: each stateful volume is "
    "stated by its component, with its copies or why it needs none",
)
def _stated_volumes(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    found: dict[tuple[str, str, str], list] = {}
    for doc in ctx.docs:
        for volume in volumes_of(doc):
            found.setdefault((doc.variant, doc.cluster or "", volume.app), []).append(volume)
    for variant, layout in sorted(ctx.layouts.items()):
        apps = variant_apps(ctx.site, layout)
        for cluster_ctx in apps.contexts:
            for component in cluster_ctx.components:
                stated = {s.workload for s in component.state(cluster_ctx)}
                volumes = found.pop((variant, cluster_ctx.cluster.name, component.name), [])
                for volume in volumes:
                    if volume.workload not in stated:
                        yield Violation(volume.doc, "$.spec", f"volume {volume.claim} of {volume.workload} "
                                        f"({volume.storage_class or 'default class'}, {volume.count} x {volume.size}) "
                                        f"is stated by no component of {component.name}: state what it holds and "
                                        "its copies, or why it needs none")  # fmt: skip
                for missing in sorted(stated - {v.workload for v in volumes}):
                    anchor = next((d for d in ctx.docs if d.variant == variant), None)
                    if anchor is not None:
                        yield Violation(anchor, "$", f"{component.name} states the volumes of {missing} in "
                                        f"cluster {cluster_ctx.cluster.name}, which has none: drop the state")  # fmt: skip
    for (_, _, app), volumes in sorted(found.items(), key=lambda kv: kv[0]):
        for volume in volumes:
            yield Violation(volume.doc, "$.spec", f"volume {volume.claim} of {volume.workload} belongs to no "
                            f"component's app ({app}): state what it holds and its copies")  # fmt: skip
