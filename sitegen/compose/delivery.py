"""Delivery: what the root Application syncs. The locked default project, the bootstrap project, one
least-privilege AppProject per project folder of the components (its kinds and namespaces computed from
the objects its apps render), one ApplicationSet per project whose Applications sync folders of dist/,
the repository credentials and the registration of spoke clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs.argocd import (
    AppProject,
    AppSet,
    ClusterRegistration,
    Destination,
    GroupKind,
    LockedDefaultProject,
    RepositoryCredentials,
    RootApplication,
)
from sitegen.components.base import Component, Project
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext
from sitegen.compose import paths
from sitegen.compose.apps import VariantApps
from sitegen.compose.charts import ObjectChart

BOOTSTRAP_PROJECT = Project(
    "bootstrap", "the root Application: AppProjects, ApplicationSets, cluster registrations"
)

Documents = Mapping[tuple[str, str], list[dict[str, Any]]]  # (cluster, app) -> rendered objects


def projects() -> list[Project]:
    """Every project of the registry, in registry order."""
    seen: dict[str, Project] = {}
    for kind in COMPONENTS:
        seen.setdefault(kind.project.name, kind.project)
    return list(seen.values())


def element(apps: VariantApps, ctx: ClusterContext, component: Component) -> dict[str, Any]:
    """One list-generator element: every field the ApplicationSet template reads, as strings."""
    variant = apps.layout.name
    common = {
        "cluster": ctx.cluster.name,
        "app": component.name,
        "layer": component.layer.name.lower(),
        "wave": str(ctx.wave(component)),
        "server": apps.layout.server(ctx.cluster),
        "namespace": component.namespace,
        "syncOptions": component.sync_options,
    }
    path = paths.in_repo(paths.app_dir(variant, ctx.cluster.name, component.name))
    return {**common, "path": str(path), "watch": f"/{path}"}


def _kinds(docs: list[dict[str, Any]], *, namespaced: bool) -> list[GroupKind]:
    return [
        GroupKind(d["apiVersion"].rpartition("/")[0], d["kind"])
        for d in docs
        if ("namespace" in d["metadata"]) == namespaced
    ]


def _namespaces(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]}


def bootstrap(chart: ObjectChart, apps: VariantApps, documents: Documents) -> None:
    site, layout = apps.site, apps.layout
    gitops = site.gitops
    argocd_ns = gitops.argocd.namespace
    LockedDefaultProject(chart, "DefaultProject", namespace=argocd_ns)
    AppProject(
        chart,
        "BootstrapProject",
        name=BOOTSTRAP_PROJECT.name,
        namespace=argocd_ns,
        description=BOOTSTRAP_PROJECT.description,
        source_repos=[gitops.repo_url],
        destinations=[Destination(layout.server(layout.hub), argocd_ns)],
        cluster_kinds=[],
        namespace_kinds=[
            GroupKind("argoproj.io", "AppProject"),
            GroupKind("argoproj.io", "ApplicationSet"),
            GroupKind("argoproj.io", "Application"),
            GroupKind("external-secrets.io", "ExternalSecret"),
        ],
    )
    for project in projects():
        members = [(ctx, c) for ctx, c in apps.members() if c.project.name == project.name]
        if not members:
            continue
        rendered = [(ctx, documents[(ctx.cluster.name, c.name)]) for ctx, c in members]
        AppProject(
            chart,
            f"Project-{project.name}",
            name=project.name,
            namespace=argocd_ns,
            description=project.description,
            source_repos=[gitops.repo_url],
            destinations=[
                *(Destination(layout.server(ctx.cluster), c.namespace) for ctx, c in members),
                *(
                    Destination(layout.server(ctx.cluster), ns)
                    for ctx, docs in rendered
                    for ns in _namespaces(docs)
                ),
            ],
            # what its apps render, nothing more: computed from the objects, never listed by hand
            cluster_kinds=[k for _, docs in rendered for k in _kinds(docs, namespaced=False)],
            namespace_kinds=[k for _, docs in rendered for k in _kinds(docs, namespaced=True)],
        )
        AppSet(
            chart,
            f"AppSet-{project.name}",
            name=project.name,
            namespace=argocd_ns,
            project=project.name,
            elements=[element(apps, ctx, c) for ctx, c in members],
            repo_url=gitops.repo_url,
            revision=gitops.revision,
        )
    RepositoryCredentials(
        chart,
        "RepoCredentials",
        repo_url=gitops.repo_url,
        namespace=argocd_ns,
        secret_store=site.secrets.store,
    )
    RootApplication(
        chart,
        "Root",
        namespace=argocd_ns,
        project=BOOTSTRAP_PROJECT.name,
        path=str(paths.in_repo(paths.bootstrap_dir(layout.name))),
        repo_url=gitops.repo_url,
        revision=gitops.revision,
        server=layout.server(layout.hub),
    )
    for cluster in layout.spokes:
        ClusterRegistration(
            chart,
            f"Cluster-{cluster.name}",
            cluster=cluster.name,
            variant=layout.name,
            server=layout.server(cluster),
            namespace=argocd_ns,
            secret_store=site.secrets.store,
        )
