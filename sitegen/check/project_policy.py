"""An AppProject's policy as Argo CD applies it at sync (v3.4: pkg/apis/application/v1alpha1
AppProject.IsGroupKindPermitted and IsDestinationPermitted, the controller's check of each resource):
a cluster-scoped kind must be in clusterResourceWhitelist (empty: none) and not in its blacklist; a
namespaced kind in namespaceResourceWhitelist when one is given (absent: every kind; empty: none) and
not in namespaceResourceBlacklist; every resource's namespace, with the app's server, must match a
destination; the app's repository a sourceRepos entry. Patterns are globs as Argo CD matches them."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any


def _listed(entries: list[Mapping[str, Any]], group: str, kind: str) -> bool:
    return any(
        fnmatchcase(group, e.get("group", "")) and fnmatchcase(kind, e.get("kind", "")) for e in entries
    )


def kind_refusal(project: Mapping[str, Any], group: str, kind: str, *, namespaced: bool) -> str | None:
    spec = project.get("spec") or {}
    what = f"{'namespaced' if namespaced else 'cluster-scoped'} {group + '/' if group else ''}{kind}"
    if namespaced:
        allow = spec.get("namespaceResourceWhitelist")
        allowed = allow is None or (bool(allow) and _listed(allow, group, kind))
        denied = _listed(spec.get("namespaceResourceBlacklist") or [], group, kind)
    else:
        allowed = _listed(spec.get("clusterResourceWhitelist") or [], group, kind)
        denied = _listed(spec.get("clusterResourceBlacklist") or [], group, kind)
    if allowed and not denied:
        return None
    return f"{what} is not permitted in project {project['metadata']['name']}"


def destination_refusal(project: Mapping[str, Any], server: str, namespace: str) -> str | None:
    for d in (project.get("spec") or {}).get("destinations") or []:
        if fnmatchcase(server, d.get("server", "")) and fnmatchcase(namespace, d.get("namespace", "")):
            return None
    return f"namespace {namespace or '(cluster)'} on {server} is not permitted in project {project['metadata']['name']}"


def source_refusal(project: Mapping[str, Any], repo: str) -> str | None:
    repos = (project.get("spec") or {}).get("sourceRepos") or []
    if any(fnmatchcase(repo, r) for r in repos):
        return None
    return f"repository {repo} is not permitted in project {project['metadata']['name']}"
