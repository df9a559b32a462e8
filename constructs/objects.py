"""Untyped API objects: for kinds without generated classes (CRDs not imported, config-file kinds)."""

from __future__ import annotations

from typing import Any

from cdk8s import ApiObject, JsonPatch

from constructs import Construct


def api_object(
    scope: Construct,
    id: str,
    api_version: str,
    kind: str,
    metadata: dict[str, Any] | None = None,
    **body: Any,
) -> ApiObject:
    """`metadata` as given; every other top-level field (spec, data, ...) is added by a JSON patch,
    since cdk8s's ApiObject takes nothing but metadata in its props."""
    obj = ApiObject(scope, id, api_version=api_version, kind=kind, metadata=metadata)
    for key, value in body.items():
        obj.add_json_patch(JsonPatch.add(f"/{key}", value))
    return obj
