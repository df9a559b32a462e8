"""config/extensions.yaml (optional): what the model does not cover, without Python.

`values` merges a mapping over the values synth generates for a chart app (key by key; lists and
scalars replace), in every cluster that runs it. `apps` adds namespaced objects as an Argo CD app of
their own, in a namespace of their own (restricted Pod Security, default-deny network policy), in
the `extensions` project, whose cluster-scoped kinds list is empty: a built-in cluster-scoped kind is
refused here, a custom one (a CRD's `Cluster` scope) by Argo CD at sync. Both land in dist/ like everything else, so `validate`, `bringup`, the
scanner and `sitegen diff` judge and show them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from sitegen.model.fields import ConfigError, DnsLabel, Strict
from sitegen.model.kinds import CORE_CLUSTER_KINDS
from sitegen.model.tenants import SYSTEM_NAMESPACES


def merged(base: Any, top: Any) -> Any:
    """Mappings merge key by key; anything else in `top` replaces the base value (as overlays do)."""
    if isinstance(base, dict) and isinstance(top, dict):
        return {**base, **{k: merged(base[k], v) if k in base else v for k, v in top.items()}}
    return top


class ExtraApp(Strict):
    description: str
    cluster: DnsLabel
    namespace: DnsLabel
    objects: list[dict[str, Any]] = Field(min_length=1)

    @field_validator("objects")
    @classmethod
    def _objects(cls, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[tuple[str, str]] = set()
        for i, obj in enumerate(objects):
            kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
            if not isinstance(obj.get("apiVersion"), str) or not isinstance(kind, str):
                raise ValueError(f"object {i}: apiVersion and kind are required")
            if not isinstance(name, str) or not name:
                raise ValueError(f"object {i} ({kind}): metadata.name is required")
            if (kind, name) in seen:
                raise ValueError(f"object {i}: {kind} {name} is listed twice")
            seen.add((kind, name))
            group = obj["apiVersion"].rpartition("/")[0]
            if (group, kind) in CORE_CLUSTER_KINDS or kind == "List":
                raise ValueError(
                    f"object {i}: {kind} is cluster-scoped: an extension app holds objects of its namespace only"
                )
        return objects


class Extensions(Strict):
    values: dict[DnsLabel, dict[str, Any]] = {}
    apps: dict[DnsLabel, ExtraApp] = {}


def check_extensions(extensions: Extensions, clusters: set[str], taken_namespaces: set[str]) -> None:
    namespaces: dict[str, str] = {}
    for name, app in extensions.apps.items():
        if app.cluster not in clusters:
            raise ConfigError(
                ("extensions", "apps", name, "cluster"),
                f"no cluster {app.cluster!r} in clusters.yaml (known: {', '.join(sorted(clusters))})",
            )
        if app.namespace in taken_namespaces or app.namespace in SYSTEM_NAMESPACES:
            raise ConfigError(
                ("extensions", "apps", name, "namespace"),
                f"{app.namespace!r} belongs to a tenant or to Kubernetes: an extension app has a namespace of its own",
            )
        other = namespaces.setdefault(f"{app.cluster}/{app.namespace}", name)
        if other != name:
            raise ConfigError(
                ("extensions", "apps", name, "namespace"), f"{app.namespace!r} is app {other!r}'s already"
            )
        for i, obj in enumerate(app.objects):
            namespace = (obj.get("metadata") or {}).get("namespace", app.namespace)
            if namespace != app.namespace:
                raise ConfigError(
                    ("extensions", "apps", name, "objects", i, "metadata", "namespace"),
                    f"{namespace!r}: an extension app's objects live in its namespace {app.namespace!r}",
                )
