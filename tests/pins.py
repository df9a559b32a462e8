"""Snapshots name the pin, not its value: a Renovate bump of config/versions.yaml (which the seed fixture
shares with the site, since the vendored charts follow it) changes no snapshot, while a component that
stops using its pin, or uses another, still does."""

from __future__ import annotations

import re
from typing import Any

from sitegen.model.versions import Versions

_SHORTEST = 4  # shorter values ("3", "v1") would be replaced inside unrelated strings


def pin_placeholders(versions: Versions) -> list[tuple[str, str]]:
    """(value, placeholder) pairs, longest value first so `v2.17.2` wins over `2.17.2` inside it."""
    found: dict[str, str] = {}
    kubernetes = versions.kubernetes
    found[kubernetes] = "<kubernetes>"
    found[kubernetes.removeprefix("v")] = "<kubernetes>"
    for key, image in sorted(versions.images.items()):
        found.setdefault(image.tag, f"<images.{key}>")
    for key, chart in sorted(versions.charts.items()):
        found.setdefault(chart.version, f"<charts.{key}>")
    for key, manifest in sorted(versions.manifests.items()):
        found.setdefault(manifest.version, f"<manifests.{key}>")
    pairs = [(value, name) for value, name in found.items() if len(value) >= _SHORTEST]
    return sorted(pairs, key=lambda pair: (-len(pair[0]), pair[0]))


def standalone(pinned: str) -> re.Pattern[str]:
    """The value as a token of its own: not inside a longer number or address (`0.3.2` in 10.20.3.251)."""
    return re.compile(rf"(?<![\w.]){re.escape(pinned)}(?![\w])")


def unpinned(value: Any, pins: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for pinned, name in pins:
            if pinned in value:
                value = standalone(pinned).sub(name, value)
        return value
    if isinstance(value, dict):
        return {unpinned(k, pins): unpinned(v, pins) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unpinned(v, pins) for v in value]
    return value
