"""Which project may create cluster-scoped RBAC, and why: the AppProjects' cluster-scoped RBAC kinds
and the objects of their apps that need them, for review. A project that may create a
ClusterRoleBinding can bind anyone to cluster-admin; this list is where a reviewer sees each one."""

from __future__ import annotations

from pathlib import Path

from sitegen.check.appsets import RepoFiles, applications, dist_files
from sitegen.model import paths
from sitegen.report.table import records, table
from sitegen.tree.documents import Document, load_tree
from sitegen.tree.fields import dig

RBAC = "rbac.authorization.k8s.io"
CLUSTER_RBAC = ("ClusterRole", "ClusterRoleBinding")


def cluster_rbac(docs: list[Document], files: RepoFiles) -> list[list[str]]:
    """Rows: variant, project, kind, how many objects, the apps that ship them."""
    apps, _ = applications([d for d in docs if d.area == paths.BOOTSTRAP], files)
    shipped: dict[tuple[str, str, str], dict[str, int]] = {}
    for app in apps:
        path = paths.from_repo(str(app.sources[0].get("path", "")))
        if path is None:
            continue
        prefix = path.as_posix() + "/"
        for doc in docs:
            if doc.group == RBAC and doc.kind in CLUSTER_RBAC and doc.file.as_posix().startswith(prefix):
                apps_of = shipped.setdefault((app.source.variant, app.project, doc.kind), {})
                apps_of[app.name] = apps_of.get(app.name, 0) + 1
    admitted: dict[tuple[str, str, str], list[str]] = {}  # names admitted ("" any), per project and kind
    for doc in docs:
        if doc.kind != "AppProject" or doc.group != "argoproj.io":
            continue
        for entry in dig(doc.body, "spec", "clusterResourceWhitelist") or []:
            if entry.get("group") == RBAC and entry.get("kind") in CLUSTER_RBAC:
                admitted.setdefault((doc.variant, doc.name, entry["kind"]), []).append(entry.get("name", ""))
    rows = []
    for (variant, project, kind), names in sorted(admitted.items()):
        found = shipped.get((variant, project, kind), {})
        scope = "ANY name" if "" in names else f"{len(names)} by name"
        rows.append([
            variant, project, f"{kind} ({scope})", str(sum(found.values())),
            ", ".join(f"{a} ({n})" for a, n in sorted(found.items())) or "NONE: not needed",
        ])  # fmt: skip
    return rows


HEADERS = ["variant", "project", "may create", "objects", "shipped by"]


def render_projects(dist: Path, *, as_json: bool = False) -> str:
    rows = cluster_rbac(load_tree(dist), dist_files(dist))
    return records(HEADERS, rows) if as_json else "\n".join(table(HEADERS, rows)) + "\n"
