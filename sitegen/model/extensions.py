"""config/extensions.yaml (optional): what the model does not cover, without Python.

`values` merges a mapping over the values synth generates for a chart app (key by key; lists and
scalars replace), in every cluster that runs it; `cluster_values` (by cluster, then app) over those, in
that cluster alone. `apps` adds namespaced objects as an Argo CD app of
their own, in a namespace of their own (restricted Pod Security, default-deny network policy), in
the `extensions` project, and cluster-scoped objects of the kinds in SAFE_CLUSTER_KINDS (priority
classes, storage classes, cluster issuers) under the checks below; any other cluster-scoped kind is
refused here (built-in) or by Argo CD at sync (a CRD's `Cluster` scope: the project lists only the
kinds its apps render). Both land in dist/ like everything else, so `validate`, `bringup`, the
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


# Cluster-scoped kinds a site adds without code: each changes nothing the site's own objects rely on
# once the checks below hold. Argo CD's `extensions` project lists them (computed from what renders).
SAFE_CLUSTER_KINDS = frozenset(
    {
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
        ("cert-manager.io", "ClusterIssuer"),
    }
)
# PriorityClass values from here up are the system's (system-cluster-critical, system-node-critical);
# Kubernetes refuses them for other names.
SYSTEM_PRIORITY = 1_000_000_000
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def is_cluster_scoped(obj: dict[str, Any]) -> bool:
    return (obj["apiVersion"].rpartition("/")[0], obj["kind"]) in SAFE_CLUSTER_KINDS


def _check_cluster_object(i: int, kind: str, obj: dict[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    if "namespace" in meta:
        raise ValueError(f"object {i}: {kind} is cluster-scoped: it takes no metadata.namespace")
    if kind == "PriorityClass":
        if obj.get("globalDefault"):
            raise ValueError(f"object {i}: a globalDefault PriorityClass would re-rank every pod of the site")
        if (
            not isinstance(obj.get("value"), int)
            or obj["value"] >= SYSTEM_PRIORITY
            or meta["name"].startswith("system-")
        ):
            raise ValueError(
                f"object {i}: a PriorityClass needs an integer value below {SYSTEM_PRIORITY} and a name outside system-"
            )
    if (
        kind == "StorageClass"
        and str((meta.get("annotations") or {}).get(DEFAULT_CLASS, "")).lower() == "true"
    ):
        raise ValueError(f"object {i}: the site's default StorageClass is the model's (storage.yaml)")


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
            if is_cluster_scoped(obj):
                _check_cluster_object(i, kind, obj)
            elif (group, kind) in CORE_CLUSTER_KINDS or kind == "List":
                safe = ", ".join(sorted(k for _, k in SAFE_CLUSTER_KINDS))
                raise ValueError(
                    f"object {i}: {kind} is cluster-scoped: an extension app holds objects of its namespace, "
                    f"and of these cluster-scoped kinds: {safe}"
                )
        return objects


class ObjectPatch(Strict):
    """A JSON merge patch (RFC 7386: mappings merge, `null` deletes a key, anything else replaces) of
    one rendered object of an app, in every cluster that renders it (or in `cluster`)."""

    app: DnsLabel
    kind: str
    name: str
    namespace: str | None = None  # any namespace when left out
    cluster: DnsLabel | None = None
    patch: dict[str, Any] = Field(min_length=1)

    @field_validator("patch")
    @classmethod
    def _identity_stays(cls, patch: dict[str, Any]) -> dict[str, Any]:
        meta = patch.get("metadata") if isinstance(patch.get("metadata"), dict) else {}
        moved = [k for k in ("apiVersion", "kind") if k in patch] + [
            f"metadata.{k}" for k in ("name", "namespace") if k in meta
        ]
        if moved:
            raise ValueError(f"{', '.join(moved)}: a patch changes an object, not which object it is")
        return patch


class Extensions(Strict):
    values: dict[DnsLabel, dict[str, Any]] = {}
    # by cluster, then app: merged over `values` in that cluster alone
    cluster_values: dict[DnsLabel, dict[DnsLabel, dict[str, Any]]] = {}
    apps: dict[DnsLabel, ExtraApp] = {}
    patches: list[ObjectPatch] = []

    def overrides(self) -> list[tuple[tuple[str | int, ...], str, str | None, dict[str, Any]]]:
        """Every values override: where it is written, its app, its cluster (None: every cluster)."""
        found: list[tuple[tuple[str | int, ...], str, str | None, dict[str, Any]]] = [
            (("extensions", "values", app), app, None, values) for app, values in sorted(self.values.items())
        ]
        for cluster, apps in sorted(self.cluster_values.items()):
            found += [
                (("extensions", "cluster_values", cluster, app), app, cluster, values)
                for app, values in sorted(apps.items())
            ]
        return found


def check_extensions(extensions: Extensions, clusters: set[str], taken_namespaces: set[str]) -> None:
    for cluster in sorted(set(extensions.cluster_values) - clusters):
        raise ConfigError(
            ("extensions", "cluster_values", cluster),
            f"no cluster {cluster!r} in clusters.yaml (known: {', '.join(sorted(clusters))})",
        )
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
            if is_cluster_scoped(obj):
                continue
            namespace = (obj.get("metadata") or {}).get("namespace", app.namespace)
            if namespace != app.namespace:
                raise ConfigError(
                    ("extensions", "apps", name, "objects", i, "metadata", "namespace"),
                    f"{namespace!r}: an extension app's objects live in its namespace {app.namespace!r}",
                )
