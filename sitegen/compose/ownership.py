"""What Git may own of an object, applied to every object an app ships (ours and the charts'), before it
is written:

- Hooks no sync runs are left out. Argo CD runs Helm's `pre-delete`/`post-delete` hooks (and its own
  PreDelete/PostDelete) when an Application is deleted (argo-cd v3.4 controller/hook.go, whatever the
  ApplicationSet's preserveResourcesOnDeletion): a renamed app would run the GPU Operator's cleanup
  and NFD's prune, which strips every node's feature labels. Helm's test and rollback hooks never run
  under Argo CD (gitops-engine maps only install and upgrade hooks to sync phases).
- A field a controller writes itself (`Component.writes`) that Git renders empty (a webhook's
  `caBundle: ''`) is left out: the API server treats absent and empty alike, and Git then owns none of
  it. A written field with a value of Git's own (a Kueue Job's `suspend: true`, which matters at
  creation) stays, and the app ignores it (`ignored_fields`, delivery.py).
- Objects whose deletion loses data or takes other objects with it (CRDs and their custom resources,
  Namespaces and what is in them, claims and volumes, AIStor's ObjectStore) carry
  `argocd.argoproj.io/sync-options: Delete=false,Prune=false`: an automated prune (a chart bump that
  drops a CRD, a namespace removed from config/) and a cascaded Application deletion leave them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sitegen.components.catalog import COMPONENTS
from sitegen.components.ownership import WrittenField
from sitegen.tree.fields import dig

SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
KEEP_ON_DELETE = ("Delete=false", "Prune=false")
# (group, kind) of the objects Argo CD must never delete: what they hold or take with them
KEEPS_DATA = frozenset({
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "Namespace"),
    ("", "PersistentVolumeClaim"),
    ("", "PersistentVolume"),
    ("aistor.min.io", "ObjectStore"),
    ("postgresql.cnpg.io", "Cluster"),  # its instances' claims go with it
    ("barmancloud.cnpg.io", "ObjectStore"),  # the archive the Cluster restores from, and writes to
})  # fmt: skip

# every field a controller of the registry writes: leaving out an empty one is harmless where none runs
ALL_WRITES = tuple(w for kind in COMPONENTS for w in kind.writes)

ARGO_HOOK, HELM_HOOK = "argocd.argoproj.io/hook", "helm.sh/hook"
# hook types a sync runs (gitops-engine pkg/sync/hook): Argo CD's own, and Helm's install and upgrade
SYNC_HOOKS = {
    ARGO_HOOK: frozenset({"PreSync", "Sync", "PostSync", "SyncFail"}),
    HELM_HOOK: frozenset({"pre-install", "pre-upgrade", "post-install", "post-upgrade"}),
}
DELETE_HOOKS = {
    ARGO_HOOK: frozenset({"PreDelete", "PostDelete"}),
    HELM_HOOK: frozenset({"pre-delete", "post-delete"}),
}


def _types(value: object) -> list[str]:
    return [t.strip() for t in str(value).split(",") if t.strip()]


def group_of(body: Mapping[str, Any]) -> str:
    return str(body.get("apiVersion", "")).rpartition("/")[0]


def runs_in_no_sync(body: Mapping[str, Any]) -> bool:
    """A hook that no sync applies: only delete, test or rollback types (or Argo CD's Skip)."""
    annotations = dig(body, "metadata", "annotations") or {}
    hooks = {key: _types(annotations[key]) for key in SYNC_HOOKS if key in annotations}
    if not hooks:
        return False
    if ARGO_HOOK in hooks:  # Argo CD's annotation decides the sync phases (gitops-engine hook.Types)
        return not set(hooks[ARGO_HOOK]) & SYNC_HOOKS[ARGO_HOOK]
    return not set(hooks[HELM_HOOK]) & SYNC_HOOKS[HELM_HOOK]


def runs_on_delete(body: Mapping[str, Any]) -> list[str]:
    """The delete-hook types the object carries (Argo CD runs them when its Application is deleted)."""
    annotations = dig(body, "metadata", "annotations") or {}
    return [t for key, types in DELETE_HOOKS.items() for t in _types(annotations.get(key, "")) if t in types]


def _without_delete_hooks(body: dict[str, Any]) -> None:
    annotations = body["metadata"]["annotations"]
    for key, types in DELETE_HOOKS.items():
        if key in annotations:
            annotations[key] = ",".join(t for t in _types(annotations[key]) if t not in types)


def _value(body: Any, pointer: str) -> Any:
    node = body
    for part in pointer.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _remove(body: Any, pointer: str) -> None:
    *parents, last = pointer.strip("/").split("/")
    node = body
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    del node[last]


def owned_by_controllers(
    body: Mapping[str, Any], writes: Iterable[WrittenField]
) -> list[tuple[str, WrittenField]]:
    """The concrete pointers of `body` that a controller writes, with the declaration."""
    return [(p, w) for w in writes if w.matches(body) for p in w.pointers(body)]


def keeps_data(body: Mapping[str, Any]) -> bool:
    return (group_of(body), str(body.get("kind", ""))) in KEEPS_DATA


def _keep_on_delete(body: dict[str, Any]) -> None:
    annotations = body["metadata"]["annotations"] = body["metadata"].get("annotations") or {}
    options = _types(annotations.get(SYNC_OPTIONS, ""))
    annotations[SYNC_OPTIONS] = ",".join([*options, *(o for o in KEEP_ON_DELETE if o not in options)])


def finish(objects: list[dict[str, Any]], writes: Iterable[WrittenField]) -> list[dict[str, Any]]:
    """The objects as Git owns them (the rules above); changed in place, the hooks no sync runs dropped."""
    writes = tuple(writes)
    kept = []
    for body in objects:
        if runs_in_no_sync(body):
            continue
        if runs_on_delete(body):
            _without_delete_hooks(body)
        for pointer, _ in owned_by_controllers(body, writes):
            if _value(body, pointer) in ("", None):
                _remove(body, pointer)
        if keeps_data(body):
            _keep_on_delete(body)
        kept.append(body)
    return kept


_METADATA = re.compile(r"^metadata:[ \t]*\n", re.M)
_KEY = re.compile(r"^(?P<indent>[ ]+)(?P<key>[\w.-]+):(?P<rest>.*)$")


def keep_on_delete_text(text: str) -> str:
    """The same annotation in a block-style YAML object kept as text (a chart's CRD, written verbatim):
    added to its `metadata.annotations`, or a new `annotations` under `metadata`."""
    start = _METADATA.search(text)
    if start is None:
        raise ValueError("no top-level metadata")
    lines = text[start.end() :].split("\n")
    block = []
    for line in lines:
        if line and not line.startswith(" "):
            break
        block.append(line)
    rest = lines[len(block) :]
    keys = [(i, m) for i, m in enumerate(_KEY.match(line) for line in block) if m]
    indent = min(len(m["indent"]) for _, m in keys)
    entry = f"{SYNC_OPTIONS}: {','.join(KEEP_ON_DELETE)}"
    for i, m in keys:
        if len(m["indent"]) != indent or m["key"] != "annotations":
            continue
        following = block[i + 1] if i + 1 < len(block) else ""
        inner = len(following) - len(following.lstrip(" "))
        if m["rest"].strip() or inner <= indent:
            raise ValueError("metadata.annotations is not a block mapping")
        j = i + 1
        while j < len(block) and (not block[j].strip() or len(block[j]) - len(block[j].lstrip(" ")) >= inner):
            if block[j].startswith(" " * inner + SYNC_OPTIONS + ":"):
                options = _types(block[j].split(":", 1)[1].strip().strip("'\""))
                merged = [*options, *(o for o in KEEP_ON_DELETE if o not in options)]
                block[j] = f"{' ' * inner}{SYNC_OPTIONS}: {','.join(merged)}"
                break
            j += 1
        else:
            block.insert(i + 1, " " * inner + entry)
        break
    else:
        block[0:0] = [" " * indent + "annotations:", " " * indent * 2 + entry]
    return text[: start.end()] + "\n".join(block + rest)
