"""What Argo CD's comparison finds between an object in Git and the object in the cluster.

The site diffs on the server side (`controller.diff.server.side`): the API server applies Git's object
in a dry run, so only fields Git sets can differ; a field a controller added that Git does not set is
no difference. A field is left out of the comparison when the Application's `ignoreDifferences` names
it (group, kind, name and namespace, JSON pointers). Not modelled: defaulting (Git's objects here are
compared with what was applied from them, which carries the same fields), jqPathExpressions and
managedFieldsManagers (nothing here uses them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_ABSENT = object()


def _leaves(node: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, Mapping) and node:
        for key, value in node.items():
            yield from _leaves(value, f"{where}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list) and node:
        for i, value in enumerate(node):
            yield from _leaves(value, f"{where}/{i}")
    else:
        yield where, node


def value_at(body: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or _ABSENT."""
    node = body
    for raw in pointer.strip("/").split("/") if pointer.strip("/") else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return _ABSENT
    return node


def has(body: Any, pointer: str) -> bool:
    return value_at(body, pointer) is not _ABSENT


def ignored(ignores: list[Mapping[str, Any]], body: Mapping[str, Any], pointer: str) -> bool:
    """Whether one of the Application's ignoreDifferences covers the field of `body`."""
    meta = body.get("metadata") or {}
    group = str(body.get("apiVersion", "")).rpartition("/")[0]
    for entry in ignores:
        if entry.get("kind") != body.get("kind") or entry.get("group", "") != group:
            continue
        if entry.get("name") and entry["name"] != meta.get("name"):
            continue
        if entry.get("namespace") and entry["namespace"] != meta.get("namespace", ""):
            continue
        if any(
            pointer == p or pointer.startswith(p.rstrip("/") + "/") for p in entry.get("jsonPointers") or []
        ):
            return True
    return False


def differences(
    desired: Mapping[str, Any], live: Mapping[str, Any], ignores: list[Mapping[str, Any]]
) -> list[str]:
    """The pointers of fields Git sets whose live value differs (ignored ones aside)."""
    if desired is live:
        return []
    return [
        pointer
        for pointer, value in _leaves(desired)
        if not pointer.startswith("/status")
        and value_at(live, pointer) != value
        and not ignored(ignores, desired, pointer)
    ]
