"""Pin rules: every image and chart is an exact version, in manifests, values and Applications."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.rules.pod_security import containers, is_partial
from sitegen.model import EXACT_VERSION

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_is_pinned(image: str) -> bool:
    if _DIGEST.search(image):
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


@rule("PIN-001", "pinned-images", "an unpinned image changes under a running site without a commit")
def _pinned_images(ctx: Context) -> Iterator[Violation]:
    for w in ctx.workloads(scheduled_only=False):
        if is_partial(w.doc):
            continue
        for cpath, container in containers(w.path, w.spec):
            image = container.get("image") or ""
            if not image_is_pinned(image):
                yield Violation(
                    w.doc, f"{cpath}.image", f"image {image!r} is not pinned to a version tag or digest"
                )


def _values_images(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Images a values file sets: `{repository, tag}` mappings and `image: <ref>` strings."""
    if isinstance(node, dict):
        if isinstance(node.get("repository"), str) and "tag" in node:
            yield path, f"{node['repository']}:{node['tag']}"
        if isinstance(node.get("image"), str):
            # NVIDIA's operators split an image into repository, image (the name) and version
            if "version" in node:
                yield path, f"{node.get('repository', '')}/{node['image']}:{node['version']}"
            else:
                yield f"{path}.image", node["image"]
        for key, value in node.items():
            yield from _values_images(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _values_images(value, f"{path}[{i}]")


@rule(
    "PIN-003",
    "pinned-chart-images",
    "an image a values file sets replaces the chart's pinned default: it must be pinned too",
)
def _pinned_values_images(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if not doc.is_values:
            continue
        for path, image in _values_images(doc.body, "$"):
            if not image_is_pinned(image):
                yield Violation(doc, path, f"image {image!r} is not pinned to a version tag or digest")


@rule("PIN-002", "pinned-charts", "a chart range or 'latest' upgrades the site behind the reviewers' backs")
def _pinned_charts(ctx: Context) -> Iterator[Violation]:
    for app in ctx.apps:
        for i, source in enumerate(app.sources):
            if "chart" not in source:
                continue
            revision = str(source.get("targetRevision", ""))
            if not EXACT_VERSION.match(revision):
                yield Violation(
                    app.source,
                    f"{app.element_path} -> {app.name}.sources[{i}].targetRevision",
                    f"chart {source['chart']} at {revision!r}, not an exact version",
                )
