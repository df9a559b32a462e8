"""External Secrets: the ClusterSecretStore of a cluster, and ExternalSecrets that write Secrets from it.

Every credential of the site (AIStor root and licence, PowerScale, Argo CD's repository and spoke
clusters) reaches Kubernetes this way; git only ever holds the reference.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.objects import SKIP_DRY_RUN, api_object
from sitegen.model import Secrets

ESO = "external-secrets.io/v1"


class SecretStore(Construct):
    """The cluster's view of the site vault: Kubernetes auth, one auth mount per cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        secrets: Secrets,
        cluster: str,
        namespace: str,
        service_account: str,
    ) -> None:
        super().__init__(scope, id)
        vault = secrets.vault
        spec = {
            "provider": {
                "vault": {
                    "server": vault.server,
                    "path": vault.path,
                    "version": vault.version,
                    "auth": {
                        "kubernetes": {
                            # each cluster has its own service-account issuer, hence its own auth mount
                            "mountPath": f"{vault.auth_mount}-{cluster}",
                            "role": vault.role,
                            "serviceAccountRef": {"name": service_account, "namespace": namespace},
                        }
                    },
                }
            }
        }
        api_object(self, "Resource", ESO, "ClusterSecretStore", {"name": secrets.store}, spec=spec)


class VaultSecret(Construct):
    """A Secret written from vault `key`: `properties` become template variables of `template` (the
    Secret's data) or, without a template, keys of their own."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        store: str,
        key: str,
        properties: list[str],
        template: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        metadata_annotations: dict[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        target: dict[str, Any] = {"name": name, "creationPolicy": "Owner"}
        if template is not None or labels or annotations:
            target["template"] = {"engineVersion": "v2"}
            meta = {k: v for k, v in (("labels", labels), ("annotations", annotations)) if v}
            if meta:
                target["template"]["metadata"] = meta
            if template is not None:
                target["template"]["data"] = template
        spec = {
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": store},
            "target": target,
            "data": [{"secretKey": p, "remoteRef": {"key": key, "property": p}} for p in properties],
        }
        metadata = {
            "name": name,
            "namespace": namespace,
            # The CRD arrives with the External Secrets app.
            "annotations": {**SKIP_DRY_RUN, **(metadata_annotations or {})},
        }
        api_object(self, "Resource", ESO, "ExternalSecret", metadata, spec=spec)
