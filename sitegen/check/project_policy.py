"""An AppProject's policy as Argo CD applies it at sync (v3.4: pkg/apis/application/v1alpha1
AppProject.IsGroupKindPermitted and IsDestinationPermitted, the controller's check of each resource):
a cluster-scoped kind must be in clusterResourceWhitelist (empty: none; an entry's `name`, when it
has one, must match the object's) and not in its blacklist; a
namespaced kind in namespaceResourceWhitelist when one is given (absent: every kind; empty: none) and
not in namespaceResourceBlacklist; every resource's namespace, with the app's server, must match a
destination, and so must the Application's own spec.destination (util/argo ValidatePermissions, before
any sync); the app's repository a sourceRepos entry. Patterns are globs as Argo CD matches them, a
destination's `!` patterns deny (isDestinationMatched)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from sitegen.tree.fields import dig


def _listed(entries: list[Mapping[str, Any]], group: str, kind: str, name: str | None = None) -> bool:
    """An entry of group and kind, and (cluster-scoped entries only) of the object's name when it
    gives one: no name matches every object."""
    return any(
        fnmatchcase(group, e.get("group", ""))
        and fnmatchcase(kind, e.get("kind", ""))
        and (name is None or not e.get("name") or fnmatchcase(name, e["name"]))
        for e in entries
    )


def kind_permitted(
    spec: Mapping[str, Any], group: str, kind: str, *, namespaced: bool, name: str = ""
) -> bool:
    if namespaced:
        allow = spec.get("namespaceResourceWhitelist")
        allowed = allow is None or (bool(allow) and _listed(allow, group, kind))
        return allowed and not _listed(spec.get("namespaceResourceBlacklist") or [], group, kind)
    allowed = _listed(spec.get("clusterResourceWhitelist") or [], group, kind, name)
    return allowed and not _listed(spec.get("clusterResourceBlacklist") or [], group, kind, name)


def kind_refusal(
    project: Mapping[str, Any], group: str, kind: str, *, namespaced: bool, name: str = ""
) -> str | None:
    if kind_permitted(project.get("spec") or {}, group, kind, namespaced=namespaced, name=name):
        return None
    what = f"{'namespaced' if namespaced else 'cluster-scoped'} {group + '/' if group else ''}{kind}"
    named = "" if namespaced or not name else f" {name}"
    return f"{what}{named} is not permitted in project {project['metadata']['name']}"


def _glob(pattern: str, value: str) -> bool:
    """globMatch with negation: `!pattern` matches what the pattern does not."""
    return not fnmatchcase(value, pattern[1:]) if pattern.startswith("!") else fnmatchcase(value, pattern)


def destination_permitted(spec: Mapping[str, Any], server: str, namespace: str, name: str = "") -> bool:
    """isDestinationMatched: a destination whose server (or cluster name) and namespace match, and no
    deny pattern (`!`) that excludes them."""
    destinations = tuple(
        (d.get("name", ""), d.get("server", ""), d.get("namespace", ""))
        for d in spec.get("destinations") or []
    )
    return _destination_permitted(destinations, server, namespace, name)


@functools.lru_cache(maxsize=4096)  # the bring-up asks about 6,000 times per variant, of a few projects
def _destination_permitted(
    destinations: tuple[tuple[str, str, str], ...], server: str, namespace: str, name: str
) -> bool:
    matched = False
    for d_name, d_server, d_namespace in destinations:
        by_name = bool(name) and _glob(d_name, name)
        by_server = bool(server) and _glob(d_server, server)
        in_namespace = _glob(d_namespace, namespace)
        denied_cluster = (not by_name and d_name.startswith("!")) or (
            not by_server and d_server.startswith("!") and in_namespace
        )
        denied_namespace = not in_namespace and d_namespace.startswith("!") and by_server
        if (by_server or by_name) and in_namespace:
            matched = True
        elif denied_cluster or denied_namespace:
            return False
    return matched


def destination_refusal(project: Mapping[str, Any], server: str, namespace: str) -> str | None:
    """A resource's namespace (controller/sync.go's permission validator)."""
    if destination_permitted(project.get("spec") or {}, server, namespace):
        return None
    return f"namespace {namespace or '(cluster)'} on {server} is not permitted in project {project['metadata']['name']}"


def application_destination_refusal(project: Mapping[str, Any], server: str, namespace: str) -> str | None:
    """The Application's own spec.destination (util/argo ValidatePermissions): refused, the app gets an
    InvalidSpecError condition and the controller syncs none of its resources, whatever they are."""
    if destination_permitted(project.get("spec") or {}, server, namespace):
        return None
    return (
        f"application destination server '{server}' and namespace '{namespace}' do not match any of the "
        f"allowed destinations in project '{project['metadata']['name']}'"
    )


def source_refusal(project: Mapping[str, Any], repo: str) -> str | None:
    repos = dig(project, "spec", "sourceRepos") or []
    if any(fnmatchcase(repo, r) for r in repos):
        return None
    return f"repository {repo} is not permitted in project {project['metadata']['name']}"
