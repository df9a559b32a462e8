"""AIStor on the cluster of its pool: the pool's drives handed to the volume manager, then a bucket
and a key of its own for each S3 consumer."""

from __future__ import annotations

from constructs.aistor import OBJECT_STORE
from constructs.aistor import root_key as aistor_root_key
from constructs.argocd import application_name
from sitegen.components.operator_steps import Stage
from sitegen.components.s3 import BucketRules, S3Access
from sitegen.components.storage.aistor import AIStor
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.component_steps import component_steps
from sitegen.model import ClusterLayout, Site, paths
from sitegen.tree.runbook import Runbook


def s3_consumers(apps: VariantApps) -> list[S3Access]:
    found = [access for ctx, c in apps.in_registry_order() for access in c.s3_access(ctx)]
    return list(dict.fromkeys(found))  # one user per consumer, whichever clusters it runs on


def aistor(book: Runbook, apps: VariantApps) -> None:
    pool = apps.site.storage.aistor.pool
    cluster = next((c for c in apps.layout.clusters if any(p.name == pool for p in c.pools)), None)
    if cluster is None:
        return
    book.part(f"AIStor on `{cluster.name}`")
    component_steps(book, apps, Stage.STORAGE, [cluster])
    consumers = s3_consumers(apps)
    if consumers:
        _buckets_and_keys(book, apps, cluster, consumers)


def _buckets_and_keys(
    book: Runbook, apps: VariantApps, cluster: ClusterLayout, consumers: list[S3Access]
) -> None:
    site = apps.site
    hostname = site.storage.aistor.s3_hostname
    root_key = f"{site.secrets.vault.path}/{aistor_root_key(OBJECT_STORE)}"
    book.step(
        "AIStor buckets and keys",
        f"""
give each S3 consumer its bucket and a key of its own (`mc` against the
ObjectStore, with the root credentials), and put each key in the vault; the consumers' ExternalSecrets
read them there. `{hostname}` resolves to the address the site gives the
`minio` Service (`kubectl -n {OBJECT_STORE} get service minio`), and its certificate is the operator's,
signed by the CA of cluster `{cluster.name}`, which `mc` trusts once it is in `~/.mc/certs/CAs/` (every
namespace's `kube-root-ca.crt` holds it):

```sh
mkdir -p ~/.mc/certs/CAs
kubectl -n {OBJECT_STORE} get configmap kube-root-ca.crt -o jsonpath='{{.data.ca\\.crt}}' > ~/.mc/certs/CAs/{cluster.name}-cluster-ca.crt
mc alias set site https://{hostname} "$(vault kv get -field=user {root_key})" "$(vault kv get -field=password {root_key})"
{_buckets(consumers, site)}
{_keys(consumers, site, apps.layout.name)}
```
""",
        after=application_name(cluster.name, AIStor.name),
    )


def _grants(access: S3Access) -> str:
    return ", ".join(f"{g.bucket}/{g.prefix} ({g.access})" for g in access.grants)


def _buckets(consumers: list[S3Access], site: Site) -> str:
    """Each bucket once, with its versioning, lock and lifecycle rules."""
    protection = site.storage.aistor.bucket_protection
    lines = []
    for bucket in sorted({b for access in consumers for b in access.buckets}):
        guard = protection.get(bucket)
        if guard is not None and guard.lock_days is not None:
            lines.append(
                f"mc mb --ignore-existing --with-lock site/{bucket}   # a lock is set at creation only"
            )
            lines.append(f"mc retention set --default COMPLIANCE {guard.lock_days}d site/{bucket}")
        else:
            lines.append(f"mc mb --ignore-existing site/{bucket}")
        if guard is not None and guard.versioning:
            lines.append(f"mc version enable site/{bucket}")
            keep = guard.lock_days or 1
            lines.append(
                f"mc ilm rule add --noncurrent-expire-days {keep} site/{bucket}   # old versions, once unlocked"
            )
        for access in consumers:
            if access.buckets[0] == bucket:
                lines += [
                    f"mc ilm rule add --prefix {prefix} --expire-days {days} site/{bucket}"
                    for prefix, days in access.expire
                ]
            for rules in access.rules:
                if rules.bucket == bucket:
                    lines += _rules(rules)
    return "\n".join(lines)


def _rules(rules: BucketRules) -> list[str]:
    bucket = f"site/{rules.bucket}"
    lines = []
    if rules.quota_tb is not None:
        lines.append(f"mc quota set {bucket} --size {rules.quota_tb}TB   # writes beyond it are refused")
    if rules.versioning:
        lines.append(f"mc version enable {bucket}")
        lines.append(
            f"mc ilm rule add --noncurrent-expire-days {rules.keep_days} {bucket}   # deleted and overwritten objects"
        )
    if rules.expire_days is not None:
        lines.append(f"mc ilm rule add --expire-days {rules.expire_days} {bucket}")
    return lines


def _keys(consumers: list[S3Access], site: Site, variant: str) -> str:
    """Each consumer's key, limited by its policy (a file of the bootstrap folder), put in the vault."""
    lines = []
    for access in consumers:
        policy = paths.in_repo(paths.s3_policy_file(variant, access.user))
        lines.append(
            f"mc admin user svcacct add site <root-user> --name {access.user} --policy {policy}"
            f"   # only: {_grants(access)}"
        )
        lines.append(
            f"vault kv put {site.secrets.vault.path}/{access.vault_key} access_key=<from above> secret_key=<from above>"
        )
    return "\n".join(lines)
