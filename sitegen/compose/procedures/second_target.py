"""The RUNBOOK's procedures of the second backup target (services.backups.second): setting it up
before the root syncs (bucket, one key per consumer with only its grants, lifecycle rules, the CA and
the PKI archive's recipient in the vault), and the quarterly restore drill that reads from it."""

from __future__ import annotations

import json
from typing import Any

from constructs.etcd_backup import ARCHIVE_UNIT, HOST_RECIPIENT
from sitegen.components.s3 import S3Access, backup_target_folder
from sitegen.components.second_target import second_endpoint
from sitegen.components.storage.database import PostgresDatabase
from sitegen.components.storage.postgres import BarmanCloud, CloudNativePg
from sitegen.compose.ansible import INVENTORY, PKI_RECIPIENT_TAG, PLAYBOOK, group
from sitegen.compose.apps import VariantApps
from sitegen.model import Site, paths

# What a OneFS bucket ACL grants for each of our accesses: WRITE puts objects (and, OneFS being a
# file system, deletes them: expiry is the lifecycle rule's), READ reads and lists.
ONEFS_PERMISSIONS = {"write-only": ("WRITE",), "read-write": ("READ", "WRITE")}
RECIPIENT = "pki-backup"  # the recipient certificate's files


def second_consumers(apps: VariantApps) -> list[S3Access]:
    found = [access for ctx, c in apps.in_registry_order() for access in c.second_copy(ctx)]
    return list(dict.fromkeys(found))


def buckets(consumers: list[S3Access]) -> list[str]:
    return sorted({g.bucket for access in consumers for g in access.grants})


def lifecycle(consumers: list[S3Access], bucket: str, lock_days: int) -> dict[str, Any]:
    """A consumer bucket's lifecycle (S3's configuration): its copies expire after their retention
    (Velero deletes its own at their TTL); under versioning that leaves a delete marker and a
    noncurrent version, which goes once its lock has ended, then the marker."""
    rules = sorted(
        {rule for access in consumers for g in access.grants if g.bucket == bucket for rule in access.expire}
    )
    expiry = [
        {"ID": f"expire-{prefix.rstrip('/')}", "Status": "Enabled", "Filter": {"Prefix": prefix},
         "Expiration": {"Days": days}}
        for prefix, days in rules
    ]  # fmt: skip
    cleanup = {
        "ID": "remove-deleted-after-their-lock",
        "Status": "Enabled",
        "Filter": {"Prefix": ""},
        "NoncurrentVersionExpiration": {"NoncurrentDays": lock_days},
        "Expiration": {"ExpiredObjectDeleteMarker": True},
    }
    return {"Rules": [*expiry, cleanup]}


def lifecycle_text(consumers: list[S3Access], bucket: str, lock_days: int) -> str:
    return json.dumps(lifecycle(consumers, bucket, lock_days), indent=2) + "\n"


def object_lock(lock_days: int) -> str:
    return json.dumps(
        {
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": lock_days}},
        },
        separators=(",", ":"),
    )


def _keys(site: Site, consumers: list[S3Access]) -> list[str]:
    second = site.services.backups.second
    kv = site.secrets.vault.path
    lines = []
    for access in consumers:
        (grant,) = access.grants
        if second.s3 == "powerscale":
            zone = site.storage.powerscale.access_zone
            lines += [
                f"isi auth users create {access.user} --zone {zone} --enabled yes",
                f"isi s3 keys create {access.user} --zone {zone}",
                *(
                    f"isi s3 buckets modify {grant.bucket} --zone {zone} --add-ace "
                    f"name={access.user},type=user,perm={perm}"
                    for perm in ONEFS_PERMISSIONS[grant.access]
                ),
            ]
        else:
            lines.append(f"# a key for {access.user}: {grant.access} on {grant.bucket}/{grant.prefix} only")
        lines.append(f"vault kv put {kv}/{access.vault_key} access_key=<from above> secret_key=<from above>")
    return lines


def setup_step(apps: VariantApps, step: int) -> str:
    site = apps.site
    second = site.services.backups.second
    consumers = second_consumers(apps)
    endpoint = second_endpoint(site)
    kv = site.secrets.vault.path
    folder = f"{kv}/{backup_target_folder(second.name)}"
    control_planes = " ".join(group(c.name, c.control_plane.name) for c in apps.layout.clusters)
    aws = "s3api"
    if second.s3 == "powerscale":
        powerscale = site.storage.powerscale
        where = (
            f"PowerScale's S3 service of access zone\n`{powerscale.access_zone}` (OneFS 9.14 or later: "
            "lifecycle rules and S3 Object Lock; S3 over HTTPS only)"
        )
        zone = [f"isi s3 settings zone modify --zone {powerscale.access_zone} --object-lock-support true"]
    else:
        where = "the site's external S3\nservice (with S3 Object Lock)"
        zone = []
    per_bucket = [
        line
        for bucket in buckets(consumers)
        for line in (
            f"{aws} create-bucket --bucket {bucket} --object-lock-enabled-for-bucket",
            f"{aws} put-object-lock-configuration --bucket {bucket} --object-lock-configuration \\\n"
            f"  '{object_lock(second.lock_days)}'",
            f"{aws} put-bucket-lifecycle-configuration --bucket {bucket} \\\n"
            f"  --lifecycle-configuration file://{paths.in_repo(paths.lifecycle_file(apps.layout.name, bucket))}",
        )
    ]
    names = ", ".join(f"`{b}`" for b in buckets(consumers))
    return f"""### {step}. The second backup target

Each cluster's etcd snapshots, kubeadm's CAs and Velero's objects are copied, away from AIStor and on
schedules of their own (`sitegen plan` lists the recovery point of each data class), to
{endpoint.url}, {where}: one bucket per consumer ({names}), so no key writes where another's copies
are, each locked (S3 Object Lock, COMPLIANCE, {second.lock_days} days): no key, its owner's included,
overwrites or deletes a copy before its lock ends. Before the root syncs, as the buckets' owner, create
them with their lock and expiry (a copy expires after its retention; what was deleted goes once its
lock ended), a key per consumer with only its grant on its own bucket (the snapshot and PKI keys write
and cannot read), and put the keys, the CA of the service's certificate and the PKI archive's
recipient certificate in the vault:

```sh
s3api() {{ aws --endpoint-url {endpoint.url} s3api "$@"; }}
{chr(10).join(zone + per_bucket)}
{chr(10).join(_keys(site, consumers))}
vault kv put {folder}/ca ca.crt=@<CA of the S3 service certificate>.pem
openssl req -x509 -newkey rsa:4096 -sha256 -days 3650 -nodes -subj /CN=pki-backup \\
  -keyout {RECIPIENT}.key -out {RECIPIENT}.crt
vault kv put {folder}/pki-recipient tls.crt=@{RECIPIENT}.crt
export PKI_RECIPIENT="$(cat {RECIPIENT}.crt)"
(cd {paths.in_repo(paths.ansible_dir(apps.layout.name))} && for hosts in {control_planes}; do
  ansible-playbook -i {INVENTORY} {PLAYBOOK} --tags {PKI_RECIPIENT_TAG} -e sitegen_hosts="$hosts"; done)
```

`{RECIPIENT}.key` decrypts every PKI archive, and so the CAs and the key of the Secrets at rest: keep it
offline (two sealed copies), never in the vault the clusters read. The control-plane hosts hold only
the certificate (`{HOST_RECIPIENT}`): each encrypts its CAs to it hourly with its own tar and openssl
(the `{ARCHIVE_UNIT}` timer of the host baseline), so the CA keys never enter a container; the
CronJob uploads the ciphertext.
"""


def restore_drill(apps: VariantApps) -> str:
    site = apps.site
    second = site.services.backups.second
    endpoint = second_endpoint(site)
    cluster = apps.layout.hub.name
    tenant = next(iter(site.tenants), "<namespace>")
    s3 = "s3"
    databases = _databases(apps)
    namespace_of = {type(c): ctx for ctx in apps.contexts for c in ctx.components}
    dumps = [
        line
        for db in databases
        for line in (
            f"{s3} ls s3://{second.bucket_of(db.cluster)}/{db.cluster}/{namespace_of[db].cluster.name}/ | tail -1"
            f"   # the newest dump of {db.cluster}: at most {db.spec(site).dump.longest_gap_seconds // 3600} h old",
            f"{s3} cp s3://{second.bucket_of(db.cluster)}/{db.cluster}/{namespace_of[db].cluster.name}/<newest>.dump drill-{db.cluster}.dump",
            f'kubectl -n {db.namespace} exec -i "$(kubectl -n {db.namespace} get cluster {db.cluster} -o '
            f"jsonpath='{{.status.currentPrimary}}')\" -c postgres -- pg_restore --list < drill-{db.cluster}.dump"
            " | grep -c 'TABLE DATA'   # its tables, readable",
        )
    ]
    return f"""### Restore drill from the second target (every quarter)

Proves that the copy outside AIStor restores, as its bucket's owner, one cluster at a time
(`{cluster}` below):

```sh
s3() {{ aws --endpoint-url {endpoint.url} s3 "$@"; }}
{s3} ls s3://{second.bucket_of("etcd")}/etcd/{cluster}/ | tail -1   # the newest snapshot: at most {second.etcd.longest_gap_seconds // 3600} h old
{s3} cp s3://{second.bucket_of("etcd")}/etcd/{cluster}/<newest>.db drill.db
etcdutl snapshot status drill.db -w table   # hash, revision, keys
{s3} ls s3://{second.bucket_of("pki")}/pki/{cluster}/ | tail -1
{s3} cp s3://{second.bucket_of("pki")}/pki/{cluster}/<newest>.tar.cms drill-pki.tar.cms
openssl cms -decrypt -binary -inform DER -in drill-pki.tar.cms -recip {RECIPIENT}.crt -inkey {RECIPIENT}.key \\
  | tar -tvf - | grep -E '(pki/(ca|etcd/ca|front-proxy-ca|sa)\\.key|enc/enc\\.yaml)$'   # the four CA keys, the encryption key
{chr(10).join(dumps)}
velero backup get --selector velero.io/schedule-name={second.name}
velero restore create drill-{second.name}-$(date +%Y%m) --from-schedule {second.name} \\
  --include-namespaces {tenant} --namespace-mappings {tenant}:{tenant}-drill --wait
kubectl delete namespace {tenant}-drill; shred -u drill.db drill-pki.tar.cms{"".join(f" drill-{db.cluster}.dump" for db in databases)}
```

"""


def after_losing_aistor(apps: VariantApps) -> str:
    """What comes back from where once AIStor's data is gone (its servers rebuilt, the ObjectStore
    Healthy and empty): the buckets and keys anew, the databases' archives restarted, Harbor's index
    cleaned of the blobs it lost; etcd and Velero from the second target only where their cluster is
    lost too."""
    site = apps.site
    second = site.services.backups.second
    databases = _databases(apps)
    backups = "\n".join(
        f"kubectl -n {db.namespace} create -f - <<EOF\napiVersion: {CloudNativePg.api}\nkind: Backup\n"
        f"metadata: {{generateName: {db.cluster}-after-aistor-, namespace: {db.namespace}}}\n"
        f"spec: {{cluster: {{name: {db.cluster}}}, method: plugin, pluginConfiguration: {{name: {BarmanCloud.plugin}}}}}\nEOF"
        for db in databases
    )
    return f"""### After losing AIStor

AIStor's servers rebuilt and its ObjectStore Healthy again, empty: every bucket and every key went with
it. What runs on the clusters' own volumes (etcd, the databases, the Prometheus TSDB) did not.

1. Run the step "AIStor buckets and keys" again, whole: the buckets come back with their locks,
   quotas, versioning and lifecycle rules, and each consumer gets a new key (the old ones no longer
   exist), put in the vault as it says. The ExternalSecrets take the new keys within their refresh
   interval; restart what reads its key only at start (`kubectl rollout restart` of Loki's, Velero's
   and Harbor's registry's workloads; the tenants' own).
2. The databases' WAL archives start again in their empty buckets; take a base backup of each at
   once, or no point in time before the next scheduled one can be restored:

```sh
{backups}
```

3. Harbor's database still lists the artifacts whose blobs are gone: pulls of them fail. Delete the
   repositories of the proxy-cache projects (they fill again on the next pull) and have the tenants
   push their own images again; Harbor's garbage collection removes nothing that is still listed.
4. Tenants' buckets have no copy outside AIStor (versions only, lost with it): their owners restore
   them from their own sources.
5. etcd and Velero's objects were not in danger unless a cluster was lost with AIStor: then restore
   etcd (above) from the newest snapshot in `s3://{second.bucket_of("etcd")}/`, with the CAs of the
   newest PKI archive put back in `/etc/kubernetes/pki` first and its encryption configuration in
   `/etc/kubernetes/enc` on every control-plane host (the key of the Secrets in the snapshot, there
   even when the vault is lost), then Velero's objects from the `{second.name}` location (`velero
   restore create --from-schedule {second.name}`), and a database lost with it from its newest dump
   on {second.name} (its section: a restore). Tenant volumes come back from their PowerScale
   snapshots, not from here.
"""


def _databases(apps: VariantApps) -> list[type[PostgresDatabase]]:
    found = {type(c) for ctx in apps.contexts for c in ctx.components if isinstance(c, PostgresDatabase)}
    return sorted(found, key=lambda db: db.cluster)
