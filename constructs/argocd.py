"""Argo CD objects: AppProjects, the foundation's Applications, each cluster's ApplicationSets, the
roots, and the registration of spoke clusters.

The Argo CD CRDs are too large to import through jsii with profit; these are ApiObjects whose specs are
checked by `validate` against the CRDs the argo-cd chart renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdk8s import ApiObject

from constructs import Construct
from constructs.objects import api_object
from constructs.secrets import VaultSecret

ARGO = "argoproj.io/v1alpha1"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# Argo CD (annotation tracking, the default since 3.0) writes this on every object it applies, over any
# value the manifest carries: `<app>:<group>/<kind>:<namespace>/<name>`.
TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"
# Argo CD's own field manager: what is applied with it before Argo CD runs, its Applications adopt
FIELD_MANAGER = "argocd-controller"


def application_name(cluster: str, app: str) -> str:
    """An app's Application (its ApplicationSet template spells the same: `<cluster>-<app>`)."""
    return f"{cluster}-{app}"


def tracked(body: dict[str, Any], app: str) -> dict[str, Any]:
    """The object as Argo CD applies it for `app`: with its tracking annotation."""
    meta = body.get("metadata") or {}
    group = body.get("apiVersion", "").rpartition("/")[0]
    value = f"{app}:{group}/{body.get('kind', '')}:{meta.get('namespace', '')}/{meta.get('name', '')}"
    annotations = {**(meta.get("annotations") or {}), TRACKING_ANNOTATION: value}
    return {**body, "metadata": {**meta, "annotations": annotations}}


RETRY = {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}


def _api_object(
    scope: Construct, api_version: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any]
) -> ApiObject:
    return api_object(scope, "Resource", api_version, kind, metadata, spec=spec)


@dataclass(frozen=True)
class Destination:
    server: str
    namespace: str


# Cluster-scoped kinds a project may create only by name (Argo CD 3.4 matches a whitelist entry's
# `name`): each grants rights, sees every request or holds another app's objects, so a project that
# could add or change one of any name could bind itself cluster-admin, rewrite other projects' objects
# on their way in, take over another app's CRD (a conversion webhook of its own on every custom resource
# of the kind) or relabel another namespace (its Pod Security level, its Kueue management).
NAMED_CLUSTER_KINDS = frozenset({
    ("", "Namespace"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("apiregistration.k8s.io", "APIService"),
})  # fmt: skip


@dataclass(frozen=True)
class GroupKind:
    group: str
    kind: str
    name: str = ""  # cluster-scoped entries only: this object alone

    @classmethod
    def of(cls, body: dict[str, Any]) -> GroupKind:
        """The entry that admits a rendered object: by name for NAMED_CLUSTER_KINDS, else its kind."""
        group, kind = body["apiVersion"].rpartition("/")[0], body["kind"]
        named = "namespace" not in body["metadata"] and (group, kind) in NAMED_CLUSTER_KINDS
        return cls(group, kind, body["metadata"]["name"] if named else "")

    def entry(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, **({"name": self.name} if self.name else {})}


class AppProject(Construct):
    """Least privilege: exact repositories, exact destinations, only the cluster-scoped kinds rendered
    (NAMED_CLUSTER_KINDS: only the objects rendered, by name).

    An empty `namespace_kinds` forbids every namespaced kind.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        description: str,
        source_repos: list[str],
        destinations: list[Destination],
        cluster_kinds: list[GroupKind],
        namespace_kinds: list[GroupKind],
        signature_keys: list[str] | None = None,
        wave: int = -2,
    ) -> None:
        super().__init__(scope, id)
        spec: dict[str, Any] = {
            "description": description,
            "sourceRepos": sorted(set(source_repos)),
            "destinations": [
                {"server": d.server, "namespace": d.namespace}
                for d in sorted(set(destinations), key=lambda d: (d.server, d.namespace))
            ],
            "clusterResourceWhitelist": [
                k.entry() for k in sorted(set(cluster_kinds), key=lambda k: (k.group, k.kind, k.name))
            ],
        }
        if signature_keys:  # only commits signed by one of these keys sync
            spec["signatureKeys"] = [{"keyID": k} for k in sorted(signature_keys)]
        if namespace_kinds:
            spec["namespaceResourceWhitelist"] = [
                k.entry() for k in sorted(set(namespace_kinds), key=lambda k: (k.group, k.kind))
            ]
        else:
            spec["namespaceResourceBlacklist"] = [{"group": "*", "kind": "*"}]
        _api_object(
            self,
            ARGO,
            "AppProject",
            {"name": name, "namespace": namespace, "annotations": {SYNC_WAVE: str(wave)}},
            spec,
        )


class LockedDefaultProject(Construct):
    """Argo CD's `default` project admits everything; nothing may use it."""

    def __init__(self, scope: Construct, id: str, *, namespace: str) -> None:
        super().__init__(scope, id)
        spec = {
            "description": "locked: every Application names a least-privilege project",
            "sourceRepos": [],
            "destinations": [],
            "clusterResourceWhitelist": [],
            "namespaceResourceBlacklist": [{"group": "*", "kind": "*"}],
        }
        _api_object(
            self,
            ARGO,
            "AppProject",
            {"name": "default", "namespace": namespace, "annotations": {SYNC_WAVE: "-2"}},
            spec,
        )


def _sync_policy() -> dict[str, Any]:
    return {"automated": {"prune": True, "selfHeal": True}, "retry": RETRY}


@dataclass(frozen=True)
class AppSource:
    """Where one Application's objects come from: a folder of this repository, charts pre-rendered."""

    repo_url: str
    revision: str
    path: str


class ClusterApplication(Construct):
    """One Application of the root: every object of one foundation component (what Argo CD needs to
    run at all) on the hub. The root's sync waves order them: it applies a wave, then waits until each
    Application in it reports Healthy and Synced (argo-cd's health customization) before the next.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: str,
        app: str,
        layer: str,
        wave: int,
        namespace: str,
        project: str,
        source: AppSource,
        server: str,
        destination_namespace: str,
        sync_options: list[str],
    ) -> None:
        super().__init__(scope, id)
        metadata = {
            "name": application_name(cluster, app),
            "namespace": namespace,
            "labels": {"sitegen.io/cluster": cluster, "sitegen.io/app": app, "sitegen.io/layer": layer},
            "annotations": {
                SYNC_WAVE: str(wave),
                # Only a change under this path refreshes the app (webhook-driven refreshes in a monorepo).
                "argocd.argoproj.io/manifest-generate-paths": f"/{source.path}",
            },
        }
        spec = {
            "project": project,
            "source": {
                "repoURL": source.repo_url,
                "targetRevision": source.revision,
                "path": source.path,
                "directory": {"recurse": True, "include": "*.yaml"},
            },
            "destination": {"server": server, "namespace": destination_namespace},
            "syncPolicy": {**_sync_policy(), "syncOptions": sync_options},
        }
        _api_object(self, ARGO, "Application", metadata, spec)


WAVE_LABEL = "sitegen.io/wave"
PROJECT_LABEL = "sitegen.io/project"
GENERATED_APP_LABELS = ("sitegen.io/cluster", "sitegen.io/app", "sitegen.io/layer", WAVE_LABEL)


def appset_name(cluster: str, wave: int, project: str) -> str:
    """The ApplicationSet of one cluster's apps of one sync wave and one project."""
    return f"{cluster}-wave-{wave}-{project}"


class ClusterApplicationSet(Construct):
    """Generates one cluster's Applications of one sync wave and one project: one per descriptor synth
    writes into an app's folder, the set naming each descriptor's path (a git files generator).

    The project is the set's own, literal, never a descriptor's: which project an app runs under, and
    so what it may deploy, is decided in bootstrap/, not by whoever can write an app's folder. Argo CD
    verifies the commit signatures of a git generator only for a set whose project is literal (the
    project's signatureKeys; v3.4 applicationset/generators/git.go), and warns that a templated one lets
    the repository's writers pick their project (Generators-Git, release-3.4).

    The generated apps sync themselves (automated, with prune and self-heal, and the app's retry): on
    day 2 none waits on another. The root orders the sets by wave on the first install, waiting on each
    through argocd-cm's health check for ApplicationSets (Healthy once every app it generated is Synced
    and Healthy). Deleting an Application (its element gone, the set renamed or pruned) leaves its
    objects where they are: no resources finalizer (preserveResourcesOnDeletion).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: str,
        wave: int,
        project: str,
        root_wave: int,
        namespace: str,
        repo_url: str,
        revision: str,
        descriptors: list[str],
    ) -> None:
        super().__init__(scope, id)
        labels = dict(
            zip(
                GENERATED_APP_LABELS,
                ("{{ .cluster }}", "{{ .app }}", "{{ .layer }}", "{{ .wave }}"),
                strict=True,
            )
        )
        template = {
            "metadata": {
                "name": "{{ .cluster }}-{{ .app }}",
                "labels": labels,
                "annotations": {"argocd.argoproj.io/manifest-generate-paths": "/{{ .path.path }}"},
            },
            "spec": {
                "project": project,
                "source": {
                    "repoURL": repo_url,
                    "targetRevision": revision,
                    "path": "{{ .path.path }}",
                    "directory": {"recurse": True, "include": "*.yaml"},
                },
                "destination": {"server": "{{ .server }}", "namespace": "{{ .namespace }}"},
                "syncPolicy": _sync_policy(),
            },
        }
        spec = {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [
                {
                    "git": {
                        "repoURL": repo_url,
                        "revision": revision,
                        "files": [{"path": path} for path in sorted(descriptors)],
                    }
                }
            ],
            "syncPolicy": {"preserveResourcesOnDeletion": True},
            "template": template,
            "templatePatch": (
                "spec:\n"
                "  syncPolicy:\n"
                "    syncOptions: {{ toJson .syncOptions }}\n"
                "  ignoreDifferences: {{ toJson .ignoreDifferences }}\n"
            ),
        }
        metadata = {
            "name": appset_name(cluster, wave, project),
            "namespace": namespace,
            "labels": {"sitegen.io/cluster": cluster, WAVE_LABEL: str(wave), PROJECT_LABEL: project},
            "annotations": {SYNC_WAVE: str(root_wave)},
        }
        _api_object(self, ARGO, "ApplicationSet", metadata, spec)


ROOT = "root"


def root_name(cluster: str, *, hub: bool) -> str:
    """The hub's root is `root`, applied by hand; a spoke's is an Application of the hub's root."""
    return ROOT if hub else f"{ROOT}-{cluster}"


class RootApplication(Construct):
    """A cluster's root: it syncs the cluster's folder of bootstrap/ (the hub's holds the projects, the
    foundation, the hub's ApplicationSets and the spokes' roots; a spoke's its ApplicationSets).

    A later change applies only what changed (ApplyOutOfSyncOnly): gitops-engine then waits, wave by
    wave, on the health of what it applied and never on an object it skipped, so the first install is
    ordered while a day-2 change waits on nothing it did not change. The hub's root is applied once by
    hand and from then on syncs itself; a spoke's root is an object of the hub's, in the wave after the
    spoke's registration.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        project: str,
        path: str,
        repo_url: str,
        revision: str,
        server: str,
        wave: int | None = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        spec = {
            "project": project,
            "source": {
                "repoURL": repo_url,
                "targetRevision": revision,
                "path": path,
                "directory": {"include": "*.yaml"},
            },
            "destination": {"server": server, "namespace": namespace},
            "syncPolicy": {
                **_sync_policy(),
                "syncOptions": ["ServerSideApply=true", "ApplyOutOfSyncOnly=true"],
            },
        }
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            metadata["labels"] = labels
        if wave is not None:
            metadata["annotations"] = {SYNC_WAVE: str(wave)}
        _api_object(self, ARGO, "Application", metadata, spec)


class ClusterRegistration(Construct):
    """A spoke cluster's Argo CD cluster Secret, written by External Secrets from the vault.

    The labels are what cluster generators select on; the token and CA never enter git.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: str,
        variant: str,
        server: str,
        namespace: str,
        secret_store: str,
    ) -> None:
        super().__init__(scope, id)
        VaultSecret(
            self,
            "Resource",
            name=f"cluster-{cluster}",
            namespace=namespace,
            store=secret_store,
            key=f"argocd/clusters/{cluster}",
            properties=["token", "caData"],
            labels={
                "argocd.argoproj.io/secret-type": "cluster",
                "sitegen.io/cluster": cluster,
                "sitegen.io/variant": variant,
                "sitegen.io/role": "spoke",
            },
            template={
                "name": cluster,
                "server": server,
                "config": '{"bearerToken": "{{ .token }}", "tlsClientConfig": {"caData": "{{ .caData }}"}}',
            },
        )


class RepositoryCredentials(Construct):
    """Argo CD's credentials for this repository (a repository Secret), from the vault."""

    def __init__(
        self, scope: Construct, id: str, *, repo_url: str, namespace: str, secret_store: str
    ) -> None:
        super().__init__(scope, id)
        VaultSecret(
            self,
            "Resource",
            name="repo-site-gitops",
            namespace=namespace,
            store=secret_store,
            key="argocd/repositories/site-gitops",
            properties=["username", "password"],
            labels={"argocd.argoproj.io/secret-type": "repository"},
            template={
                "type": "git",
                "url": repo_url,
                "username": "{{ .username }}",
                "password": "{{ .password }}",
            },
        )


class OidcClientSecret(Construct):
    """Argo CD's OIDC client secret, from the vault, labelled so argocd-cm may reference it."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        key: str,
        vault_key: str,
        namespace: str,
        secret_store: str,
    ) -> None:
        super().__init__(scope, id)
        VaultSecret(
            self,
            "Resource",
            name=name,
            namespace=namespace,
            store=secret_store,
            key=vault_key,
            properties=[key],
            labels={"app.kubernetes.io/part-of": "argocd"},
            template={key: f"{{{{ .{key} }}}}"},
        )
