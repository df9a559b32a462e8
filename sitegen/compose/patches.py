"""config/extensions.yaml `patches`: JSON merge patches (RFC 7386) of rendered objects, by app, kind
and name, applied as synth composes each app (the chart apps' rendered objects and our constructs'
alike), so that what other apps read of them (network policies, projects, the bring-up) and what is
written are the patched objects. A patch that matches no object of any variant is refused, naming its
entry: a renamed object or a typo would otherwise leave the site without the change, silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.model import ConfigError
from sitegen.model.extensions import ObjectPatch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a mapping merges key by key, `None` deletes the key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class Patches:
    """The site's patches, and which of them matched an object so far."""

    def __init__(self, patches: list[ObjectPatch]) -> None:
        self.patches = patches
        self.matched: set[int] = set()

    def for_app(self, cluster: str, app: str) -> list[tuple[int, ObjectPatch]]:
        return [
            (i, p)
            for i, p in enumerate(self.patches)
            if p.app == app and (p.cluster is None or p.cluster == cluster)
        ]

    def apply(self, found: list[tuple[int, ObjectPatch]], doc: Mapping[str, Any]) -> dict[str, Any] | None:
        """The object patched, or None when no patch of the app names it."""
        meta = doc.get("metadata") or {}
        patched: dict[str, Any] | None = None
        for i, p in found:
            if p.kind != doc.get("kind") or p.name != meta.get("name"):
                continue
            if p.namespace is not None and p.namespace != meta.get("namespace"):
                continue
            self.matched.add(i)
            patched = merge_patch(patched if patched is not None else doc, p.patch)
        return patched

    def check_all_matched(self) -> None:
        for i, p in enumerate(self.patches):
            if i not in self.matched:
                where = f"cluster {p.cluster}'s" if p.cluster else "any cluster's"
                ns = f"{p.namespace}/" if p.namespace else ""
                raise ConfigError(
                    ("extensions", "patches", i),
                    f"no {p.kind} {ns}{p.name} in app {p.app} of {where} rendered objects: nothing to patch",
                )
