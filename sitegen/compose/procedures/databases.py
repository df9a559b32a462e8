"""The RUNBOOK's sections on each database of the site (CloudNativePG, storage/database.py): what a
lost node costs and what to do when it does not come back, a restore to a point in time from the
archive in AIStor, and one from the logical dump on the second target after AIStor itself is lost.

The bring-up simulation replays the lost-node section (database_day2.py): `INSTANCE` is the
placeholder it fills with the lost instance's number.
"""

from __future__ import annotations

from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.components.second_target import second_endpoint
from sitegen.components.storage.database import PostgresDatabase
from sitegen.components.storage.postgres import BarmanCloud, CloudNativePg
from sitegen.compose.apps import VariantApps
from sitegen.model import ClusterLayout

INSTANCE = "<n>"


def title(database: str, cluster: str) -> str:
    """`database`: the CloudNativePG Cluster's name; `cluster`: the Kubernetes cluster's."""
    return f"The database `{database}` on `{cluster}`: a node lost"


def restore_title(database: str, cluster: str) -> str:
    return f"The database `{database}` on `{cluster}`: a restore"


def database_sections(apps: VariantApps, layout: ClusterLayout, db: type[PostgresDatabase]) -> str:
    return f"{_lost_node(apps, layout, db)}\n{_restore(apps, layout, db)}"


def _lost_node(apps: VariantApps, layout: ClusterLayout, db: type[PostgresDatabase]) -> str:
    """What a lost node costs the database, and what to do when the node does not come back."""
    database = db.spec(apps.site)
    pool = layout.system_pool
    ns, name, consumer = db.namespace, db.cluster, db.consumer.name
    return f"""### {title(db.cluster, layout.name)}

`{name}` runs {database.instances} PostgreSQL instances on as many `{pool.name}` nodes (never two on one),
each on its node's NVMe. A commit is acknowledged once a standby has it too (synchronous, durability
required), so a node that dies takes no committed transaction with it: CloudNativePG promotes the most
advanced standby once the primary's pod is not Ready (the node monitor's grace period, then the
primary's lease, 15 s), `{name}-rw` follows it and {consumer} reconnects. Nothing to do but watch:

```sh
kubectl -n {ns} get cluster {name}   # PRIMARY: the promoted instance; READY one short
```

A node that comes back with its disks brings its instance back as a standby (pg_rewind). One that does
not (a host to rebuild or replace: its NVMe volumes are gone with it) is deleted: its pods go, those of
Deployments and StatefulSets start elsewhere, and the instance's claims, bound to the node's volumes,
are deleted so the operator clones a new instance from the primary onto another `{pool.name}` node
({len(pool.hosts) - database.instances} of the {len(pool.hosts)} have none). Any other claim of a
node-local class the node held (`kubectl get pvc -A -o wide`, its volume's node) waits for the host's
rebuild, or is deleted the same way when its data may go:

```sh
kubectl delete node <node>
kubectl -n {ns} delete pvc {name}-{INSTANCE} {name}-{INSTANCE}-wal --wait=false
kubectl -n {ns} delete pod {name}-{INSTANCE} --ignore-not-found   # made again for the old claims; goes with them
kubectl -n {ns} wait cluster/{name} --for=jsonpath='{{.status.readyInstances}}'={database.instances} --timeout=30m
```

While one instance is missing, commits wait for the one standby left; with none left they stop (no
write is acknowledged on one node alone) until the new instance has caught up.
"""


def _restore(apps: VariantApps, layout: ClusterLayout, db: type[PostgresDatabase]) -> str:
    """A restore to a point in time from the archive in AIStor, or from the second target's dump."""
    site = apps.site
    database = db.spec(site)
    pool = layout.system_pool
    second = site.services.backups.second
    dump_bucket = second.bucket_of(db.cluster)
    ns, name, consumer = db.namespace, db.cluster, db.consumer.name
    restored, restored_db = f"{name}-restore", f"{db.database}_restored"
    return f"""### {restore_title(db.cluster, layout.name)}

A bad change, or every instance lost: CloudNativePG restores into a new Cluster, never in
place. Restore beside it from the archive in AIStor (base backups kept {database.backups.retention_days}
days, every WAL segment since, at most {database.archive_timeout_minutes} min behind), copy it into a new
database of `{name}` and swap the names (Argo CD keeps managing `{name}` and {consumer} throughout); drop
`{db.database}_before_restore` once {consumer} is checked:

```sh
kubectl -n {ns} apply -f - <<EOF
apiVersion: {CloudNativePg.api}
kind: Cluster
metadata: {{name: {restored}, namespace: {ns}}}
spec:
  instances: 1
  imageName: {site.versions.images["postgresql"].ref}
  storage: {{storageClass: {LOCAL_NVME}, size: {database.volume_gb}Gi}}
  affinity: {{nodeSelector: {dict(pool.placement.node_selector)}, tolerations: {[dict(t) for t in pool.placement.tolerations]}}}
  bootstrap:
    recovery:
      source: archive
      recoveryTarget: {{targetTime: "<UTC time before the bad change, or drop it for the newest>"}}
  externalClusters:
    - name: archive
      plugin: {{name: {BarmanCloud.plugin}, parameters: {{barmanObjectName: {db.archive()}, serverName: {name}}}}}
EOF
kubectl -n {ns} wait cluster/{restored} --for=jsonpath='{{.status.readyInstances}}'=1 --timeout=2h
kubectl -n {ns} exec {restored}-1 -c postgres -- pg_dump --format=custom {db.database} > {db.cluster}.dump
primary=$(kubectl -n {ns} get cluster {name} -o jsonpath='{{.status.currentPrimary}}')
psql() {{ kubectl -n {ns} exec -i "$primary" -c postgres -- psql -v ON_ERROR_STOP=1 "$@"; }}
psql -c 'CREATE DATABASE {restored_db} OWNER {db.owner}'
kubectl -n {ns} exec -i "$primary" -c postgres -- pg_restore --no-owner --role={db.owner} -d {restored_db} < {db.cluster}.dump
psql <<'SQL'   # {consumer}'s connections end; they come back to the restored database
ALTER DATABASE {db.database} WITH ALLOW_CONNECTIONS false;
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db.database}';
ALTER DATABASE {db.database} RENAME TO {db.database}_before_restore;
ALTER DATABASE {restored_db} RENAME TO {db.database};
SQL
kubectl -n {ns} delete cluster {restored}; shred -u {db.cluster}.dump
```

Without AIStor (its archive gone with it), the newest logical dump on the second target (every run of
`{db.dump_name(second.name)}`, kept {database.dump.retention_days} days, at most
{database.dump.longest_gap_seconds // 3600} h old) restores the same way, read with the key of its
bucket's owner: `aws --endpoint-url {second_endpoint(site).url} s3 cp
s3://{dump_bucket}/{db.cluster}/{layout.name}/<newest>.dump {db.cluster}.dump`, then from `primary=` on.{(" " + db.after_aistor_loss) if db.after_aistor_loss else ""}
"""
