"""External Secrets: a SecretStore per namespace, and ExternalSecrets that write Secrets from it.

Every credential of the site (AIStor root and licence, PowerScale, Argo CD's repository and spoke
clusters) reaches Kubernetes this way; git only ever holds the reference.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.objects import SKIP_DRY_RUN, api_object
from sitegen.model import Secrets

ESO = "external-secrets.io/v1"


# The service account a namespace's SecretStore logs in to the vault as (External Secrets requests
# its token): the vault role of the namespace is bound to it and nothing else.
READER_SERVICE_ACCOUNT = "vault-reader"


def vault_role(secrets: Secrets, namespace: str) -> str:
    """The vault role of one namespace's store, on its cluster's auth mount."""
    return f"{secrets.vault.role}-{namespace}"


def vault_mount(secrets: Secrets, cluster: str) -> str:
    """Each cluster has its own service-account issuer, hence its own Kubernetes auth mount."""
    return f"{secrets.vault.auth_mount}-{cluster}"


# The audience of a reader's login token, which each vault role requires (`audience`): a token minted
# for anything else (a pod's own token, one meant for another service) does not log in. The token
# carries the API server's audience too: Vault reviews the login with the token itself, and the API
# server authenticates that TokenReview only with a token meant for it.
VAULT_AUDIENCE = "vault"

# Kubernetes' bootstrap ClusterRole that may create TokenReviews and SubjectAccessReviews, and nothing else
AUTH_DELEGATOR = "system:auth-delegator"
TOKEN_REVIEWERS = "vault-readers-token-review"


class TokenReviewers(Construct):
    """Every namespace's reader may ask the API server to review a token. The site vault is outside the
    cluster and its Kubernetes auth mounts have no reviewer token of their own: Vault reviews each
    login with the JWT the login presents (External Secrets requests it for the reader), so that
    account must be allowed to create TokenReviews (system:auth-delegator). Without it every login
    fails with 403 and no SecretStore becomes Ready. One binding per cluster, every reader a subject."""

    def __init__(self, scope: Construct, id: str, *, namespaces: list[str]) -> None:
        super().__init__(scope, id)
        rbac = "rbac.authorization.k8s.io"
        api_object(
            self,
            "Binding",
            f"{rbac}/v1",
            "ClusterRoleBinding",
            {"name": TOKEN_REVIEWERS},
            roleRef={"apiGroup": rbac, "kind": "ClusterRole", "name": AUTH_DELEGATOR},
            subjects=[
                {"kind": "ServiceAccount", "name": READER_SERVICE_ACCOUNT, "namespace": ns}
                for ns in namespaces
            ],
        )


class SecretStore(Construct):
    """One namespace's view of the site vault: a SecretStore that reads as the namespace's own vault
    role, whose policy names exactly the keys that namespace's ExternalSecrets read. No store is
    shared between namespaces, so a tenant (or a compromised controller) reads only its own keys."""

    def __init__(
        self, scope: Construct, id: str, *, secrets: Secrets, cluster: str, namespace: str, api_audience: str
    ) -> None:
        super().__init__(scope, id)
        vault = secrets.vault
        api_object(
            self,
            "ServiceAccount",
            "v1",
            "ServiceAccount",
            {"name": READER_SERVICE_ACCOUNT, "namespace": namespace},
            automountServiceAccountToken=False,
        )
        spec = {
            "provider": {
                "vault": {
                    "server": vault.server,
                    "path": vault.path,
                    "version": vault.version,
                    "auth": {
                        "kubernetes": {
                            "mountPath": vault_mount(secrets, cluster),
                            "role": vault_role(secrets, namespace),
                            "serviceAccountRef": {
                                "name": READER_SERVICE_ACCOUNT,
                                "audiences": [api_audience, VAULT_AUDIENCE],
                            },
                        }
                    },
                }
            }
        }
        api_object(
            self, "Resource", ESO, "SecretStore", {"name": secrets.store, "namespace": namespace}, spec=spec
        )


class VaultSecret(Construct):
    """A Secret written from vault `key`: `properties` become template variables of `template` (the
    Secret's data) or, without a template, keys of their own; None: every property of the key."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        store: str,
        key: str,
        properties: list[str] | None,
        template: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        metadata_annotations: dict[str, str] | None = None,
        secret_type: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        target: dict[str, Any] = {"name": name, "creationPolicy": "Owner"}
        if template is not None or labels or annotations or secret_type:
            target["template"] = {"engineVersion": "v2"}
            if secret_type:
                target["template"]["type"] = secret_type
            meta = {k: v for k, v in (("labels", labels), ("annotations", annotations)) if v}
            if meta:
                target["template"]["metadata"] = meta
            if template is not None:
                target["template"]["data"] = template
        spec: dict[str, Any] = {
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": "SecretStore", "name": store},  # its own namespace's
            "target": target,
        }
        if properties is None:
            spec["dataFrom"] = [{"extract": {"key": key}}]
        else:
            spec["data"] = [{"secretKey": p, "remoteRef": {"key": key, "property": p}} for p in properties]
        metadata = {
            "name": name,
            "namespace": namespace,
            # The CRD arrives with the External Secrets app.
            "annotations": {**SKIP_DRY_RUN, **(metadata_annotations or {})},
        }
        api_object(self, "Resource", ESO, "ExternalSecret", metadata, spec=spec)


def read_keys(external_secret: dict[str, Any]) -> set[str]:
    """The vault keys an ExternalSecret reads: its data's, and its dataFrom extracts (every property)."""
    spec = external_secret.get("spec") or {}
    keys = {item["remoteRef"]["key"] for item in spec.get("data") or []}
    return keys | {item["extract"]["key"] for item in spec.get("dataFrom") or []}
