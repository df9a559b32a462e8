"""The vault: the keys the root's ExternalSecrets read, then per cluster its Kubernetes auth mount and
per namespace a policy and role that read exactly its own keys."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from constructs.secrets import (
    AUTH_DELEGATOR,
    READER_SERVICE_ACCOUNT,
    TOKEN_REVIEWERS,
    VAULT_AUDIENCE,
    read_keys,
    vault_mount,
    vault_role,
)
from sitegen.components.s3 import backup_target_folder
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.aistor import s3_consumers
from sitegen.compose.procedures.issuing_ca import issuing_ca, written_here
from sitegen.compose.procedures.second_target import second_consumers
from sitegen.model import Site, VariantLayout, paths
from sitegen.tree.runbook import Runbook, key_line


def vault_setup(book: Runbook, apps: VariantApps, by_cluster: Mapping[str, list[dict[str, Any]]]) -> None:
    site = apps.site
    documents = [doc for docs in by_cluster.values() for doc in docs]
    book.part("The vault")
    issuing_ca(book, apps)
    book.step(
        "Keys, auth mounts and policies",
        f"""
Every credential reaches the clusters through External Secrets: each namespace that holds
ExternalSecrets has its own SecretStore, which logs in through the cluster's Kubernetes auth mount
`{site.secrets.vault.auth_mount}-<cluster>` as the namespace's own role `{site.secrets.vault.role}-<namespace>`.
Before the root Application syncs, the vault must hold (key: properties):

{_vault_keys(documents, leave_out=_written_later(apps), formats=_formats(apps))}
{_registration(apps)}
Each cluster gets its own Kubernetes auth mount, and each namespace a policy that reads exactly the
keys its ExternalSecrets name, bound to its `{READER_SERVICE_ACCOUNT}` service account: no cluster reads
another's credentials, no tenant a platform key, and only cert-manager's namespace the CA's private
key. A mount has no reviewer token of its own: Vault reviews each login with the token the login
presents (`disable_local_ca_jwt`, as the vault runs outside the clusters), which every
`{READER_SERVICE_ACCOUNT}` may have reviewed (binding `{TOKEN_REVIEWERS}` to `{AUTH_DELEGATOR}`, synced
with the stores); no pod of a tenant's namespace runs as it or holds a token Secret of it
(admission policies `sitegen-tenant-pods`, `sitegen-tenant-secrets`). Each role requires the audience `{VAULT_AUDIENCE}`, which the stores request beside
the API server's: a pod's own token of the same account does not log in. With `VAULT_ADDR` and an admin token, and each cluster's API CA in `<cluster>-ca.crt`:

```sh
{_vault_auth(site, apps.layout, by_cluster)}
```
""",
    )


def _written_later(apps: VariantApps) -> set[str]:
    """The keys another step writes: the issuing CA's, the S3 consumers' and the second backup target's."""
    second_folder = backup_target_folder(apps.site.services.backups.second.name)
    later = {access.vault_key for access in [*s3_consumers(apps), *second_consumers(apps)]}
    return later | {f"{second_folder}/ca", f"{second_folder}/pki-recipient"} | written_here(apps.site)


def _formats(apps: VariantApps) -> dict[str, str]:
    return {key: text for ctx, c in apps.members() for key, text in c.vault_formats(ctx).items()}


def _registration(apps: VariantApps) -> str:
    if not apps.layout.spokes:
        return ""
    bootstrap = paths.in_repo(paths.bootstrap_dir(apps.layout.name))
    return f"""
A spoke's key `argocd/clusters/<cluster>` is written in the next step: the ExternalSecret
`cluster-<cluster>` in `{bootstrap}/` turns it into Argo CD's cluster Secret, and no Application of
a spoke syncs before it exists.
"""


def _vault_auth(site: Site, layout: VariantLayout, by_cluster: Mapping[str, list[dict[str, Any]]]) -> str:
    """Per cluster its auth mount; per namespace with ExternalSecrets a policy reading exactly their
    keys and a role bound to the namespace's reader service account (no namespace reads another's)."""
    secrets = site.secrets
    vault = secrets.vault
    data = f"{vault.path}/data" if vault.version == "v2" else vault.path
    out = []
    for cluster in layout.clusters:
        mount = vault_mount(secrets, cluster.name)
        lines = [
            f"vault auth enable -path={mount} kubernetes",
            f"vault write auth/{mount}/config kubernetes_host=https://{cluster.spec.api.endpoint} "
            f"kubernetes_ca_cert=@{cluster.name}-ca.crt disable_local_ca_jwt=true",
        ]
        for namespace, keys in sorted(_keys_by_namespace(by_cluster[cluster.name]).items()):
            policy = f"{vault.role}-{cluster.name}-{namespace}"
            grants = "\n".join(f'path "{data}/{key}" {{ capabilities = ["read"] }}' for key in keys)
            lines += [
                f"vault policy write {policy} - <<'EOF'\n{grants}\nEOF",
                f"vault write auth/{mount}/role/{vault_role(secrets, namespace)} "
                f"bound_service_account_names={READER_SERVICE_ACCOUNT} "
                f"bound_service_account_namespaces={namespace} audience={VAULT_AUDIENCE} "
                f"policies={policy} ttl=1h",
            ]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _keys_by_namespace(documents: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {}
    for doc in documents:
        if doc.get("kind") == "ExternalSecret":
            found.setdefault(doc["metadata"]["namespace"], set()).update(read_keys(doc))
    return {ns: sorted(keys) for ns, keys in found.items()}


def _vault_keys(documents: Iterable[dict[str, Any]], leave_out: set[str], formats: Mapping[str, str]) -> str:
    """The vault keys and properties every ExternalSecret of the variant reads (computed, never listed by
    hand), but for those a later step writes; with what their software asks of the values."""
    keys: dict[str, set[str]] = {}
    for doc in documents:
        if doc.get("kind") != "ExternalSecret":
            continue
        for item in doc["spec"].get("data", []):
            ref = item["remoteRef"]
            if ref["key"] in leave_out:
                continue
            keys.setdefault(ref["key"], set()).add(ref.get("property", ""))
        for item in doc["spec"].get("dataFrom", []):
            keys.setdefault(item["extract"]["key"], set()).add("(one property per client: id -> key)")
    return "\n".join(
        key_line(k, ", ".join(sorted(p for p in props if p)) + (f". {formats[k]}" if k in formats else ""))
        for k, props in sorted(keys.items())
    )
