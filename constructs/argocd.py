"""Argo CD objects of the bootstrap folder: AppProjects, ApplicationSets, the root Application, and
the registration of spoke clusters.

The Argo CD CRDs are too large to import through jsii with profit; these are ApiObjects whose specs are
checked against `shared/crds/argo-cd` by `validate`.
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
RETRY = {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}


def _api_object(
    scope: Construct, api_version: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any]
) -> ApiObject:
    return api_object(scope, "Resource", api_version, kind, metadata, spec=spec)


@dataclass(frozen=True)
class Destination:
    server: str
    namespace: str


@dataclass(frozen=True)
class GroupKind:
    group: str
    kind: str

    def entry(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind}


class AppProject(Construct):
    """Least privilege: exact repositories, exact destinations, only the cluster-scoped kinds rendered.

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
                k.entry() for k in sorted(set(cluster_kinds), key=lambda k: (k.group, k.kind))
            ],
        }
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


def _app_metadata() -> dict[str, Any]:
    return {
        "name": "{{.cluster}}-{{.app}}",
        "labels": {
            "sitegen.io/cluster": "{{.cluster}}",
            "sitegen.io/app": "{{.app}}",
            "sitegen.io/layer": "{{.layer}}",
        },
        "annotations": {
            SYNC_WAVE: "{{.wave}}",
            # Only a change under this path refreshes the app (webhook-driven refreshes in a monorepo).
            "argocd.argoproj.io/manifest-generate-paths": "{{.watch}}",
        },
    }


def _sync_policy() -> dict[str, Any]:
    return {"automated": {"prune": True, "selfHeal": True}, "retry": RETRY}


# syncOptions is a list: plain templates only fill strings, so it is patched in per element.
_SYNC_OPTIONS_PATCH = "spec:\n  syncPolicy:\n    syncOptions: {{ toJson .syncOptions }}\n"


class AppSet(Construct):
    """One ApplicationSet: a list generator written from the site model, for one project.

    Every app syncs `{{.path}}` of this repository: a folder of dist/ holding every object of the app,
    upstream charts already rendered. The project is a literal, never templated.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        project: str,
        elements: list[dict[str, Any]],
        repo_url: str,
        revision: str,
    ) -> None:
        super().__init__(scope, id)
        spec = {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "syncPolicy": {"preserveResourcesOnDeletion": True},
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": _app_metadata(),
                "spec": {
                    "project": project,
                    "source": {
                        "repoURL": repo_url,
                        "targetRevision": revision,
                        "path": "{{.path}}",
                        "directory": {"recurse": True, "include": "*.yaml"},
                    },
                    "destination": {"server": "{{.server}}", "namespace": "{{.namespace}}"},
                    "syncPolicy": _sync_policy(),
                },
            },
            "templatePatch": _SYNC_OPTIONS_PATCH,
        }
        _api_object(
            self,
            ARGO,
            "ApplicationSet",
            {"name": name, "namespace": namespace, "annotations": {SYNC_WAVE: "0"}},
            spec,
        )


class RootApplication(Construct):
    """Applied once by hand; from then on it syncs the bootstrap folder, itself included."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        project: str,
        path: str,
        repo_url: str,
        revision: str,
        server: str,
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
            "syncPolicy": {**_sync_policy(), "syncOptions": ["ServerSideApply=true"]},
        }
        _api_object(self, ARGO, "Application", {"name": "root", "namespace": namespace}, spec)


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
            metadata_annotations={SYNC_WAVE: "-1"},
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
            metadata_annotations={SYNC_WAVE: "-1"},
        )
