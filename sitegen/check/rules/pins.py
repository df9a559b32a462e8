"""Pin rules: every image and chart is an exact version, in manifests, values and Applications; every
image comes through the site's registry."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.rules.pod_security import containers, is_partial
from sitegen.model import EXACT_VERSION
from sitegen.tree.documents import Document

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


# Tags that name a branch, not a release: they move like `latest` (a chart built from source may
# default to one, with a staging registry: Kueue 0.19.2's values.yaml did).
_MOVING_TAG = re.compile(r"^(latest|main|master|dev|devel|edge|nightly|canary|stable|release-[0-9.]+)$")
_STAGING = re.compile(r"(^|[/.-])k8s-staging-|/staging/")


def image_is_pinned(image: str) -> bool:
    if _DIGEST.search(image):
        return True
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag or tag == "" or _MOVING_TAG.match(tag):
        return False
    return not _STAGING.search(name)


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


def image_registry(image: str) -> str:
    """The registry an image reference pulls from, as containerd resolves it (docker/reference): the
    first path component when it looks like a host (a dot, a port, `localhost`), else Docker Hub."""
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


# Objects whose pods ctx.workloads reads, and the schemas of the others (an `image` there is a property's
# definition); any other kind's images are its operator's to run (a GPU Operator ClusterPolicy, an
# ObjectStore, a CloudNativePG Cluster, a Prometheus)
NOT_OPERANDS = ("", "apps", "batch", "apiextensions.k8s.io")


@rule(
    "PIN-003",
    "mirrored-registries",
    "an image from a registry no Harbor proxy cache mirrors is pulled by every host from the internet, "
    "past Harbor's scanning, and not at all on a site without internet",
)
def _mirrored_registries(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    registry = ctx.site.services.registry
    mirrored = {registry.hostname} | {cache.registry for cache in registry.proxy_cache.values()}
    found: list[tuple[Document, str, str]] = [
        (w.doc, f"{cpath}.image", container.get("image") or "")
        for w in ctx.workloads(scheduled_only=False)
        if not is_partial(w.doc)
        for cpath, container in containers(w.path, w.spec)
    ]
    found += [
        (doc, path, image)
        for doc in ctx.docs
        if doc.group not in NOT_OPERANDS and not doc.is_values and not doc.is_host_file
        for path, image in operand_images(doc.body.get("spec"), "$.spec")
    ]
    for doc, path, image in found:
        source = image_registry(image)
        if source not in mirrored:
            yield Violation(doc, path, f"image {image!r} comes from {source}, which no proxy cache of "
                                       "registry.proxy_cache in config/services.yaml mirrors")  # fmt: skip


def operand_images(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """The images a custom resource names for its operator to run: `image` or `imageName` references,
    and `repository` beside an `image` that is only a name (NVIDIA's operators: `<repository>/<image>`);
    none of a part that says `enabled: false` (the operator runs nothing of it)."""
    if isinstance(node, Mapping):
        if node.get("enabled") is False:
            return
        repository = node.get("repository")
        if isinstance(repository, str) and isinstance(node.get("image"), str):
            yield f"{path}.repository", f"{repository}/{node['image']}"
        for key, value in node.items():
            if key in ("image", "imageName") and isinstance(value, str) and not isinstance(repository, str):
                yield f"{path}.{key}", value
            elif not isinstance(value, str):
                yield from operand_images(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from operand_images(item, f"{path}[{i}]")
