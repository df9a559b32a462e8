"""Delivery: what the root Application syncs, and what the site ApplicationSet generates.

The root holds the locked default project, the bootstrap project, one least-privilege AppProject per
project folder of the components (its kinds and namespaces computed from the objects its apps render),
the foundation's Applications (Argo CD and what it needs to run) and the site ApplicationSet. That one
generates every other Application from the descriptor synth writes into each app's folder, rolling
them out in steps of the same sync waves the root would have used (docs/delivery.md has the why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from constructs.argocd import (
    AppProject,
    AppSource,
    ClusterApplication,
    ClusterRegistration,
    Destination,
    GroupKind,
    LockedDefaultProject,
    OidcClientSecret,
    RepositoryCredentials,
    RootApplication,
    SiteApplicationSet,
)
from constructs.secrets import read_keys
from sitegen.components.base import Project
from sitegen.components.catalog import COMPONENTS
from sitegen.components.platform.argo_cd import OIDC_SECRET, OIDC_SECRET_KEY, OIDC_VAULT_KEY, ArgoCd
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.storage.aistor import AIStor
from sitegen.compose import paths
from sitegen.compose.apps import CompositionError, VariantApps, predecessors
from sitegen.compose.charts import ObjectChart

BOOTSTRAP_PROJECT = Project(
    "bootstrap", "the root Application: AppProjects, Applications, cluster registrations"
)

SITE_APPSET = "site"
ACCESS_APP = "argocd-access"  # Argo CD's repository and OIDC credentials and the spoke registrations

Documents = Mapping[tuple[str, str], list[dict[str, Any]]]  # (cluster, app) -> rendered objects


def projects() -> list[Project]:
    """Every project of the registry, in registry order."""
    seen: dict[str, Project] = {}
    for kind in COMPONENTS:
        seen.setdefault(kind.project.name, kind.project)
    return list(seen.values())


def _credentials_wave(apps: VariantApps) -> int:
    """Vault-backed objects of the root (repository and spoke credentials) wait for the hub's store."""
    hub = apps.context(apps.layout.hub)
    return hub.wave(hub.get(SecretStore)) + 1


def root_waves(apps: VariantApps, documents: Documents) -> dict[tuple[str, str], int]:
    """(cluster, component) -> the wave of its Application in the root.

    Within a cluster, the component's sync wave. A spoke's Applications follow its registration (they
    cannot sync before Argo CD knows the cluster), and an app reading an S3 consumer's key follows the
    AIStor ObjectStore wherever it runs (the runbook writes the key once the store is up): both raise waves,
    and everything after the raised component in its cluster moves with it.
    """
    hub = apps.layout.hub
    spoke_start = _credentials_wave(apps) + 1
    waves = {
        (ctx.cluster.name, c.name): ctx.wave(c) + (0 if ctx.cluster is hub else spoke_start)
        for ctx, c in apps.members()
    }
    edges = [
        ((ctx.cluster.name, earlier.name), (ctx.cluster.name, c.name))
        for ctx in apps.contexts
        for name, before in predecessors(ctx).items()
        for c in [next(x for x in ctx.components if x.name == name)]
        for earlier in before
    ]
    stores = [(ctx.cluster.name, c.name) for ctx, c in apps.members() if isinstance(c, AIStor)]
    s3_keys = {access.vault_key for ctx, c in apps.members() for access in c.s3_access(ctx)}
    edges += [
        (store, app) for app, docs in documents.items() if s3_keys & _read_keys(docs) for store in stores
    ]
    for _ in range(len(waves) + 1):
        moved = False
        for earlier, later in edges:
            if waves[later] <= waves[earlier]:
                waves[later] = waves[earlier] + 1
                moved = True
        if not moved:
            return waves
    raise CompositionError("the root's waves do not settle: a dependency cycle across clusters")


def _read_keys(docs: list[dict[str, Any]]) -> set[str]:
    return {key for d in docs if d.get("kind") == "ExternalSecret" for key in read_keys(d)}


def _kinds(docs: list[dict[str, Any]], *, namespaced: bool) -> list[GroupKind]:
    return [GroupKind.of(d) for d in docs if ("namespace" in d["metadata"]) == namespaced]


def _namespaces(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]}


def foundation(apps: VariantApps) -> set[str]:
    """The hub components Argo CD needs before it runs at all: Argo CD and what must sync before it.
    They stay Applications of the root (installed by the runbook first, then adopted); everything
    else the site ApplicationSet generates."""
    hub = apps.context(apps.layout.hub)
    before = predecessors(hub)
    found: set[str] = set()
    todo = [hub.get(ArgoCd).name]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += [c.name for c in before[name]]
    return found


@dataclass(frozen=True)
class Delivery:
    """What the bootstrap adds to a variant beyond the root's own objects: the generator elements
    of the site ApplicationSet (descriptor path -> element)."""

    descriptors: dict[PurePosixPath, dict[str, Any]]


def _descriptor(
    *,
    cluster: str,
    app: str,
    layer: str,
    wave: int,
    project: str,
    server: str,
    namespace: str,
    sync_options: list[str],
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "app": app,
        "layer": layer,
        "wave": str(wave),  # a label value in the generated Application
        "project": project,
        "server": server,
        "namespace": namespace,
        "syncOptions": list(sync_options),
    }


def bootstrap(chart: ObjectChart, access: ObjectChart, apps: VariantApps, documents: Documents) -> Delivery:
    """The root's objects into `chart`; Argo CD's credentials and the spoke registrations into
    `access`, an app of the site ApplicationSet like any other (they wait for the hub's store)."""
    site, layout = apps.site, apps.layout
    gitops = site.gitops
    argocd_ns = gitops.argocd.namespace
    variant, hub = layout.name, layout.hub.name
    credentials_wave = _credentials_wave(apps)
    waves = root_waves(apps, documents)
    root_apps = foundation(apps)
    descriptors: dict[PurePosixPath, dict[str, Any]] = {}

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
            GroupKind("argoproj.io", "Application"),
            GroupKind("argoproj.io", "ApplicationSet"),
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
            signature_keys=list(gitops.signature_keys),
        )
        for ctx, component in members:
            cluster = ctx.cluster.name
            wave = waves[(cluster, component.name)]
            if cluster == hub and component.name in root_apps:
                path = paths.in_repo(paths.app_dir(variant, cluster, component.name))
                ClusterApplication(
                    chart,
                    f"App-{cluster}-{component.name}",
                    cluster=cluster,
                    app=component.name,
                    layer=component.layer.name.lower(),
                    wave=wave,
                    namespace=argocd_ns,
                    project=project.name,
                    source=AppSource(gitops.repo_url, gitops.revision, str(path)),
                    server=layout.server(ctx.cluster),
                    destination_namespace=component.namespace,
                    sync_options=component.sync_options,
                )
                continue
            descriptors[paths.app_descriptor(variant, cluster, component.name)] = _descriptor(
                cluster=cluster,
                app=component.name,
                layer=component.layer.name.lower(),
                wave=wave,
                project=project.name,
                server=layout.server(ctx.cluster),
                namespace=component.namespace,
                sync_options=component.sync_options,
            )
    descriptors[paths.app_descriptor(variant, hub, ACCESS_APP)] = _descriptor(
        cluster=hub,
        app=ACCESS_APP,
        layer="foundation",
        wave=credentials_wave,
        project=BOOTSTRAP_PROJECT.name,
        server=layout.server(layout.hub),
        namespace=argocd_ns,
        sync_options=["ServerSideApply=true"],
    )
    RepositoryCredentials(
        access,
        "RepoCredentials",
        repo_url=gitops.repo_url,
        namespace=argocd_ns,
        secret_store=site.secrets.store,
    )
    OidcClientSecret(
        access,
        "OidcClientSecret",
        name=OIDC_SECRET,
        key=OIDC_SECRET_KEY,
        vault_key=OIDC_VAULT_KEY,
        namespace=argocd_ns,
        secret_store=site.secrets.store,
    )
    for spoke in layout.spokes:
        ClusterRegistration(
            access,
            f"Cluster-{spoke.name}",
            cluster=spoke.name,
            variant=variant,
            server=layout.server(spoke),
            namespace=argocd_ns,
            secret_store=site.secrets.store,
        )
    generated = [int(d["wave"]) for d in descriptors.values()]
    SiteApplicationSet(
        chart,
        "SiteApplicationSet",
        name=SITE_APPSET,
        namespace=argocd_ns,
        repo_url=gitops.repo_url,
        revision=gitops.revision,
        descriptors=str(paths.in_repo(paths.app_descriptors_pattern(variant))),
        waves=generated,
        wave=max(waves[(hub, name)] for name in root_apps) + 1,
    )
    RootApplication(
        chart,
        "Root",
        namespace=argocd_ns,
        project=BOOTSTRAP_PROJECT.name,
        path=str(paths.in_repo(paths.bootstrap_dir(variant))),
        repo_url=gitops.repo_url,
        revision=gitops.revision,
        server=layout.server(layout.hub),
    )
    return Delivery(descriptors)
