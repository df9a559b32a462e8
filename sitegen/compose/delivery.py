"""Delivery: what each cluster's root Application syncs, and what its ApplicationSets generate.

The hub's root holds the locked default project, the bootstrap project, one least-privilege AppProject
per project folder of the components (its kinds and namespaces computed from the objects its apps
render), the foundation's Applications (Argo CD and what it needs to run), the hub's ApplicationSets and
each spoke's root, which holds that spoke's ApplicationSets. A cluster has one ApplicationSet per sync
wave of its apps; each generates, from the descriptor synth writes into each app's folder, Applications
that sync, prune and heal themselves. The roots order the sets by wave and wait on each until every app
it generated is Synced and Healthy (docs/delivery.md has the why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from constructs.argocd import (
    ROOT,
    AppProject,
    AppSource,
    ClusterApplication,
    ClusterApplicationSet,
    ClusterRegistration,
    Destination,
    GroupKind,
    LockedDefaultProject,
    OidcClientSecret,
    RepositoryCredentials,
    RootApplication,
    root_name,
)
from constructs.secrets import read_keys
from sitegen.components.base import Component, Project
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext
from sitegen.components.ownership import WrittenField
from sitegen.components.platform.argo_cd import ArgoCd
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.storage.aistor import AIStor
from sitegen.compose.apps import CompositionError, VariantApps, predecessors
from sitegen.compose.charts import ObjectChart
from sitegen.compose.ownership import group_of, owned_by_controllers
from sitegen.model import paths

BOOTSTRAP_PROJECT = Project(
    "bootstrap", "the root Application: AppProjects, Applications, cluster registrations"
)

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


Node = tuple[str, str]  # (cluster, app); a spoke's root in the hub's root is (spoke, ROOT)


def _relax(waves: dict[Node, int], edges: list[tuple[Node, Node]], what: str) -> dict[Node, int]:
    """Raise each later node above the earlier one of every edge until nothing moves."""
    for _ in range(len(waves) + 1):
        moved = False
        for earlier, later in edges:
            if waves[later] <= waves[earlier]:
                waves[later] = waves[earlier] + 1
                moved = True
        if not moved:
            return waves
    raise CompositionError(f"the {what} waves do not settle: a dependency cycle")


@dataclass(frozen=True)
class Order:
    """Where every app syncs: its cluster's wave (its ApplicationSet), and the wave in the hub's root
    of each hub app and each spoke's root."""

    waves: dict[Node, int]  # (cluster, app) -> its wave within its cluster
    hub_root: dict[Node, int]  # hub apps and spoke roots -> their wave in the hub's root


def sync_order(apps: VariantApps, documents: Documents) -> Order:
    """Within a cluster, the component's sync wave, raised where an app reads an S3 consumer's key of
    an ObjectStore of the same cluster (the runbook writes the key once the store is up).

    Across clusters only the hub's root orders, and only the first install: a spoke's root follows the
    spoke's registration (Argo CD generates nothing for a cluster it does not know) and whatever of the
    hub its apps wait on; a hub app reading a spoke's S3 key follows that spoke's root, and everything
    after it in the hub moves with it. On day 2 the root applies only what changed, so the hub never
    waits on a spoke it did not change.
    """
    hub = apps.layout.hub.name
    waves: dict[Node, int] = {(ctx.cluster.name, c.name): ctx.wave(c) for ctx, c in apps.members()}
    waves[(hub, ACCESS_APP)] = _credentials_wave(apps)
    within = [
        ((ctx.cluster.name, earlier.name), (ctx.cluster.name, c.name))
        for ctx in apps.contexts
        for name, before in predecessors(ctx).items()
        for c in [next(x for x in ctx.components if x.name == name)]
        for earlier in before
    ]
    stores = [(ctx.cluster.name, c.name) for ctx, c in apps.members() if isinstance(c, AIStor)]
    s3_keys = {access.vault_key for ctx, c in apps.members() for access in c.s3_access(ctx)}
    readers = [app for app, docs in documents.items() if s3_keys & _read_keys(docs)]
    s3 = [(store, reader) for reader in readers for store in stores if store != reader]
    waves = _relax(waves, within + [(a, b) for a, b in s3 if a[0] == b[0]], "clusters'")

    def at_root(node: Node) -> Node:
        return node if node[0] == hub else (node[0], ROOT)

    spokes = [s.name for s in apps.layout.spokes]
    root: dict[Node, int] = {n: w for n, w in waves.items() if n[0] == hub}
    root.update({(s, ROOT): 0 for s in spokes})
    edges = [(a, b) for a, b in within if a[0] == hub]
    edges += [(a, b) for a, b in s3 if a[0] == hub == b[0]]
    edges += [((hub, ACCESS_APP), (s, ROOT)) for s in spokes]
    edges += [(at_root(a), at_root(b)) for a, b in s3 if a[0] != b[0]]
    return Order(waves, _relax(root, edges, "hub root's"))


def _read_keys(docs: list[dict[str, Any]]) -> set[str]:
    return {key for d in docs if d.get("kind") == "ExternalSecret" for key in read_keys(d)}


def _kinds(docs: list[dict[str, Any]], *, namespaced: bool) -> list[GroupKind]:
    return [GroupKind.of(d) for d in docs if ("namespace" in d["metadata"]) == namespaced]


def _namespaces(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]}


def foundation(apps: VariantApps) -> set[str]:
    """The hub components Argo CD needs before it runs at all: Argo CD and what must sync before it.
    They stay Applications of the root (installed by the runbook first, then adopted); everything
    else the clusters' ApplicationSets generate."""
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
    """What the bootstrap adds to a variant beyond the roots' own objects: the generator elements of
    the clusters' ApplicationSets (descriptor path -> element)."""

    descriptors: dict[PurePosixPath, dict[str, Any]]


def ignored_fields(docs: list[dict[str, Any]], writes: list[WrittenField]) -> list[dict[str, Any]]:
    """The app's ignoreDifferences: each field of its objects that a controller of its cluster writes
    and Git still sets (a value of its own that matters at creation; empty ones are left out at
    hydration, ownership.py)."""
    found = []
    for body in docs:
        pointers = sorted({p for p, _ in owned_by_controllers(body, writes)})
        if pointers:
            meta = body["metadata"]
            found.append({
                "group": group_of(body),
                "kind": body["kind"],
                "name": meta["name"],
                **({"namespace": meta["namespace"]} if meta.get("namespace") else {}),
                "jsonPointers": pointers,
            })  # fmt: skip
    return found


RESPECT_IGNORES = "RespectIgnoreDifferences=true"


def _descriptor(
    *,
    cluster: str,
    app: str,
    layer: str,
    wave: int,
    server: str,
    namespace: str,
    sync_options: list[str],
    ignore: list[dict[str, Any]],
) -> dict[str, Any]:
    # a sync applies the live value of an ignored field (a Kueue Job's suspend), not Git's
    options = [*sync_options, RESPECT_IGNORES] if ignore else list(sync_options)
    return {
        "cluster": cluster,
        "app": app,
        "layer": layer,
        "wave": str(wave),  # a label value in the generated Application, and its ApplicationSet's
        "server": server,
        "namespace": namespace,
        "syncOptions": options,
        "ignoreDifferences": ignore,
    }


def _projects(chart: ObjectChart, apps: VariantApps, documents: Documents) -> None:
    """The locked default project, the bootstrap project and one least-privilege project per project
    folder of the components."""
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


def _access(access: ObjectChart, apps: VariantApps) -> None:
    """Argo CD's repository and OIDC credentials and the spoke registrations, from the vault."""
    site, layout = apps.site, apps.layout
    argocd_ns = site.gitops.argocd.namespace
    RepositoryCredentials(
        access,
        "RepoCredentials",
        repo_url=site.gitops.repo_url,
        namespace=argocd_ns,
        secret_store=site.secrets.store,
    )
    OidcClientSecret(
        access,
        "OidcClientSecret",
        name=ArgoCd.oidc_secret,
        key=ArgoCd.oidc_secret_key,
        vault_key=ArgoCd.oidc_vault_key,
        namespace=argocd_ns,
        secret_store=site.secrets.store,
    )
    for spoke in layout.spokes:
        ClusterRegistration(
            access,
            f"Cluster-{spoke.name}",
            cluster=spoke.name,
            variant=layout.name,
            server=layout.server(spoke),
            namespace=argocd_ns,
            secret_store=site.secrets.store,
        )


def bootstrap(
    root: ObjectChart, spoke_roots: Mapping[str, ObjectChart], access: ObjectChart, apps: VariantApps,
    documents: Documents,
) -> Delivery:  # fmt: skip
    """Each cluster's root into `root` (the hub's) and `spoke_roots`; Argo CD's credentials and the
    spoke registrations into `access`, an app of the hub like any other (it waits for the hub's store)."""
    layout = apps.layout
    variant, hub = layout.name, layout.hub.name
    order = sync_order(apps, documents)
    root_apps = foundation(apps)
    descriptors: dict[PurePosixPath, dict[str, Any]] = {}
    # cluster -> (wave, project) -> the descriptors of its ApplicationSet
    generated: dict[str, dict[tuple[int, str], list[PurePosixPath]]] = {c.name: {} for c in layout.clusters}

    _projects(root, apps, documents)
    for ctx, component in apps.members():
        cluster = ctx.cluster.name
        if cluster == hub and component.name in root_apps:
            _foundation_application(root, apps, order, component)
            continue
        wave = (
            order.hub_root[(cluster, component.name)]
            if cluster == hub
            else order.waves[(cluster, component.name)]
        )
        descriptor = paths.app_descriptor(variant, cluster, component.name)
        generated[cluster].setdefault((wave, component.project.name), []).append(descriptor)
        descriptors[descriptor] = _generated_descriptor(
            ctx, component, wave, documents[(cluster, component.name)]
        )
    access_wave = order.hub_root[(hub, ACCESS_APP)]
    access_descriptor = paths.app_descriptor(variant, hub, ACCESS_APP)
    generated[hub].setdefault((access_wave, BOOTSTRAP_PROJECT.name), []).append(access_descriptor)
    descriptors[access_descriptor] = _descriptor(
        cluster=hub,
        app=ACCESS_APP,
        layer="foundation",
        wave=access_wave,
        server=layout.server(layout.hub),
        namespace=apps.site.gitops.argocd.namespace,
        sync_options=["ServerSideApply=true"],
        ignore=[],
    )
    _access(access, apps)
    _roots(root, spoke_roots, apps, order, generated)
    return Delivery(descriptors)


def _foundation_application(root: ObjectChart, apps: VariantApps, order: Order, component: Component) -> None:
    """A foundation app of the hub as an Application of the root (the runbook installs it first)."""
    gitops, layout = apps.site.gitops, apps.layout
    cluster = layout.hub.name
    path = paths.in_repo(paths.app_dir(layout.name, cluster, component.name))
    ClusterApplication(
        root,
        f"App-{cluster}-{component.name}",
        cluster=cluster,
        app=component.name,
        layer=component.layer.name.lower(),
        wave=order.hub_root[(cluster, component.name)],
        namespace=gitops.argocd.namespace,
        project=component.project.name,
        source=AppSource(gitops.repo_url, gitops.revision, str(path)),
        server=layout.server(layout.hub),
        destination_namespace=component.namespace,
        sync_options=component.sync_options,
    )


def _generated_descriptor(
    ctx: ClusterContext, component: Component, wave: int, docs: list[dict[str, Any]]
) -> dict[str, Any]:
    """The descriptor of an app its cluster's ApplicationSet of `wave` generates."""
    writes = [w for c in ctx.components for w in c.writes]
    return _descriptor(
        cluster=ctx.cluster.name,
        app=component.name,
        layer=component.layer.name.lower(),
        wave=wave,
        server=ctx.variant.server(ctx.cluster),
        namespace=component.namespace,
        sync_options=component.sync_options,
        ignore=ignored_fields(docs, writes),
    )


def _roots(
    root: ObjectChart, spoke_roots: Mapping[str, ObjectChart], apps: VariantApps, order: Order,
    generated: Mapping[str, Mapping[tuple[int, str], list[PurePosixPath]]],
) -> None:  # fmt: skip
    """Each cluster's ApplicationSets (one per wave and project it generates apps in) into its root,
    each spoke's root into the hub's, and the hub's root last."""
    gitops, layout = apps.site.gitops, apps.layout
    argocd_ns = gitops.argocd.namespace
    variant, hub = layout.name, layout.hub.name
    hub_server = layout.server(layout.hub)
    for cluster in layout.clusters:
        name = cluster.name
        chart = root if cluster is layout.hub else spoke_roots[name]
        for (wave, project), members in sorted(generated[name].items()):
            ClusterApplicationSet(
                chart,
                f"ApplicationSet-{name}-{wave}-{project}",
                cluster=name,
                wave=wave,
                project=project,
                root_wave=wave,
                namespace=argocd_ns,
                repo_url=gitops.repo_url,
                revision=gitops.revision,
                descriptors=[str(paths.in_repo(member)) for member in members],
            )
        if cluster is not layout.hub:
            RootApplication(
                root,
                f"Root-{name}",
                name=root_name(name, hub=False),
                namespace=argocd_ns,
                project=BOOTSTRAP_PROJECT.name,
                path=str(paths.in_repo(paths.cluster_root_dir(variant, name, hub=False))),
                repo_url=gitops.repo_url,
                revision=gitops.revision,
                server=hub_server,
                wave=order.hub_root[(name, ROOT)],
                labels={"sitegen.io/cluster": name},
            )
    RootApplication(
        root,
        "Root",
        name=root_name(hub, hub=True),
        namespace=argocd_ns,
        project=BOOTSTRAP_PROJECT.name,
        path=str(paths.in_repo(paths.bootstrap_dir(variant))),
        repo_url=gitops.repo_url,
        revision=gitops.revision,
        server=hub_server,
    )
