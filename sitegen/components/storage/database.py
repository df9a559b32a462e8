"""PostgreSQL databases of the site's services, one CloudNativePG `Cluster` each: `PostgresDatabase`,
which a service's database component specializes (registry/harbor_database.py,
observability/grafana_database.py) with its names and its `services.yaml` entry.

Each is `instances` on as many system-pool nodes (one per node, required), each on its node's NVMe: a
primary and standbys, a commit acknowledged once a standby has it too (synchronous, `dataDurability:
required`), so a node that dies takes no committed transaction with it, and the operator promotes a
standby in its place. Every WAL segment is archived by the Barman Cloud plugin into the database's
bucket of AIStor (at most `archive_timeout_minutes` behind), with base backups on `backups`: any
point in time within their retention comes back. A logical dump on `dump` goes to the second backup
target, outside AIStor's failure domain. Its RUNBOOK sections of Day 2 say what a lost node costs and
what to do when it does not come back, and how to restore (from the archive, or from the dump once
AIStor itself is lost).
"""

from __future__ import annotations

from typing import ClassVar

from constructs import Construct
from constructs.host_backup import OUTPUT_DIR, HostBackup, Producer, S3Target, output_mount
from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from constructs.objects import RESTRICTED_CONTAINER, api_object
from constructs.secrets import VaultSecret
from constructs.site_watches import BackupWatch, DatabaseWatch, Watch
from sitegen.components import second_target
from sitegen.components.base import Component, Layer, RenderedComponent, State
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.s3 import S3Access, S3Grant
from sitegen.components.storage.aistor import AIStor, ca_secret
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.storage.postgres import BarmanCloud, CloudNativePg
from sitegen.model import Site
from sitegen.model.services import Database

POSTGRES_UID = 26  # the postgres user of CloudNativePG's images
BARMAN_API = "barmancloud.cnpg.io/v1"
PORT = 5432
# In a database's lost-node section of the RUNBOOK, the lost instance's number: the bring-up simulation
# (check/bringup/database_day2.py) replays the section with it filled in.
INSTANCE = "<n>"


class PostgresDatabase(RenderedComponent):
    """A service's database. Its name is also its AIStor user's; its Cluster `cluster` holds the
    database `database` of the role `owner`, whose password is the vault's `vault_key`."""

    layer = Layer.SERVICES
    after: ClassVar[tuple[type[Component], ...]] = (CloudNativePg, BarmanCloud, LocalNvme, SecretStore)
    skip_dry_run = True  # its kinds arrive with the operator, the plugin and External Secrets
    images = {
        "postgresql": "the database's instances, and pg_dump for its logical copy",
        "curl": "the upload of the logical copy to the second target",
    }
    consumer: ClassVar[type[Component]]  # the service it serves: where it applies, and before which
    cluster: ClassVar[str]
    database: ClassVar[str]
    owner: ClassVar[str]
    vault_key: ClassVar[str]
    holds: ClassVar[str]  # what it keeps, as `plan` says it
    after_aistor_loss: ClassVar[str] = ""  # what the RUNBOOK adds to its restore when AIStor was lost
    max_connections: ClassVar[int] = 100

    instance_placeholder: ClassVar[str] = INSTANCE  # in its lost-node section: the lost instance's number

    @classmethod
    def spec(cls, site: Site) -> Database:
        raise NotImplementedError

    @staticmethod
    def lost_node_title(database: str, cluster: str) -> str:
        """`database`: the CloudNativePG Cluster's name; `cluster`: the Kubernetes cluster's."""
        return f"The database `{database}` on `{cluster}`: a node lost"

    @staticmethod
    def restore_title(database: str, cluster: str) -> str:
        return f"The database `{database}` on `{cluster}`: a restore"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        here = scope.cluster.name
        return [
            OperatorStep(
                Stage.DAY_2, self.lost_node_title(self.cluster, here), _lost_node_section(scope, type(self))
            ),
            OperatorStep(
                Stage.DAY_2, self.restore_title(self.cluster, here), _restore_section(scope, type(self))
            ),
        ]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return cls.consumer.applies(scope) and CloudNativePg.applies(scope)

    # ---- names every part derives from the Cluster's -------------------------------------------------
    @classmethod
    def host(cls) -> str:
        return f"{cls.cluster}-rw"  # the operator's Service that follows the primary

    @classmethod
    def app_secret(cls) -> str:
        return f"{cls.cluster}-app"  # the owner's credentials (basic-auth), from the vault

    @classmethod
    def archive(cls) -> str:
        return f"{cls.cluster}-aistor"  # the plugin's ObjectStore: where the WAL and base backups go

    @classmethod
    def dump_name(cls, second: str) -> str:
        return f"{cls.cluster}-dump-{second}"

    @property
    def s3_secret(self) -> str:
        return f"{self.cluster}-s3"

    @property
    def aistor_ca(self) -> str:
        return f"{self.cluster}-aistor-ca"  # its own: the namespace's `aistor-ca` may be its service's

    @property
    def dump_user(self) -> str:
        return f"{self.cluster}-dump"

    @property
    def dump_prefix(self) -> str:
        return self.cluster

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(AIStor, (), "the WAL archive and the base backups (S3)"),
            second_target.second_flow(ctx.site, "the logical dump to the second target"),
        ]

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        # its own bucket, whole: barman checks that the bucket exists (HeadBucket) and expires old
        # backups itself (delete markers under the bucket's lock)
        return [S3Access(self.name, (S3Grant(self.spec(ctx.site).bucket),))]

    def second_copy(self, ctx: ClusterContext) -> list[S3Access]:
        second = ctx.site.services.backups.second
        dump = self.spec(ctx.site).dump
        prefix = f"{self.dump_prefix}/"
        grant = S3Grant(second.bucket_of(self.dump_prefix), prefix, "write-only")
        return [
            S3Access(self.dump_user, (grant,), expire=((prefix, dump.retention_days),), target=second.name)
        ]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        database = self.spec(scope.site)
        second = scope.site.services.backups.second.name
        return [
            BackupWatch("cronjob", self.dump_name(second), f"the dump of {self.name} to {second}",
                        database.dump.longest_gap_seconds, self.namespace),
            DatabaseWatch(self.namespace, self.cluster, database.instances, database.archive_timeout_minutes * 60,
                          database.backups.longest_gap_seconds),
        ]  # fmt: skip

    def state(self, ctx: ClusterContext) -> list[State]:
        database = self.spec(ctx.site)
        second = ctx.site.services.backups.second
        return [
            State(self.cluster, self.holds, "state", copies=(
                *(["each commit on a second instance before it is acknowledged (synchronous): a node lost "
                   "loses none"] if database.instances > 1 else []),
                f"WAL in AIStor s3://{database.bucket}/, at most {database.archive_timeout_minutes} min behind; "
                f"base backups every {database.backups.longest_gap_seconds // 3600} h at most, kept "
                f"{database.backups.retention_days} d",
                f"pg_dump on {second.name} s3://{second.bucket_of(self.dump_prefix)}/, every "
                f"{database.dump.longest_gap_seconds // 3600} h at most, kept {database.dump.retention_days} d",
            )),
        ]  # fmt: skip

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        database = self.spec(ctx.site)
        VaultSecret(
            scope, "AppCredentials", name=self.app_secret(), namespace=self.namespace, store=ctx.store,
            key=self.vault_key, properties=["password"], secret_type="kubernetes.io/basic-auth",
            template={"username": self.owner, "password": "{{ .password }}"},
        )  # fmt: skip
        (archive_access,) = self.s3_access(ctx)
        VaultSecret(
            scope, "ArchiveKey", name=self.s3_secret, namespace=self.namespace, store=ctx.store,
            key=archive_access.vault_key, properties=["access_key", "secret_key"],
            template={"ACCESS_KEY_ID": "{{ .access_key }}", "ACCESS_SECRET_KEY": "{{ .secret_key }}"},
        )  # fmt: skip
        ca_secret(scope, namespace=self.namespace, store=ctx.store, name=self.aistor_ca)
        self._cluster(scope, ctx)
        endpoint = AIStor.s3_endpoint(ctx.site, ctx.cluster)
        api_object(
            scope, "Archive", BARMAN_API, "ObjectStore", {"name": self.archive(), "namespace": self.namespace},
            spec={
                "retentionPolicy": f"{database.backups.retention_days}d",
                "configuration": {
                    "destinationPath": f"s3://{database.bucket}/",
                    "endpointURL": endpoint.url,
                    "endpointCA": {"name": self.aistor_ca, "key": "ca.crt"},
                    "s3Credentials": {
                        "accessKeyId": {"name": self.s3_secret, "key": "ACCESS_KEY_ID"},
                        "secretAccessKey": {"name": self.s3_secret, "key": "ACCESS_SECRET_KEY"},
                    },
                    "wal": {"compression": "gzip", "maxParallel": 4},
                    "data": {"compression": "gzip", "jobs": 2},
                },
            },
        )  # fmt: skip
        api_object(
            scope, "BaseBackups", CloudNativePg.api, "ScheduledBackup", {"name": self.cluster, "namespace": self.namespace},
            spec={
                # the operator's cron has seconds first
                "schedule": f"0 {database.backups.schedule}",
                "cluster": {"name": self.cluster},
                "method": "plugin",
                "pluginConfiguration": {"name": BarmanCloud.plugin},
                "backupOwnerReference": "self",
                "immediate": True,  # the first base backup at once: the archive restores nothing before it
            },
        )  # fmt: skip
        self._dump(scope, ctx)

    def _cluster(self, scope: Construct, ctx: ClusterContext) -> None:
        database = self.spec(ctx.site)
        placement = ctx.system_placement
        api_object(
            scope, "Cluster", CloudNativePg.api, "Cluster", {"name": self.cluster, "namespace": self.namespace},
            spec={
                "instances": database.instances,
                "imageName": ctx.image("postgresql").ref,
                "primaryUpdateStrategy": "unsupervised",
                "enableSuperuserAccess": False,
                "bootstrap": {"initdb": {"database": self.database, "owner": self.owner, "secret": {"name": self.app_secret()}}},
                "postgresql": {
                    "parameters": {
                        "archive_timeout": f"{database.archive_timeout_minutes}min",
                        # what its consumer opens at most, with room for pg_dump and the operator
                        "max_connections": str(self.max_connections),
                    },
                    # a commit waits for one standby: a lost node loses no committed transaction
                    **(
                        {"synchronous": {"method": "any", "number": 1, "dataDurability": "required"}}
                        if database.instances > 1
                        else {}
                    ),
                },
                "storage": {"storageClass": LOCAL_NVME, "size": f"{database.volume_gb}Gi"},
                "walStorage": {"storageClass": LOCAL_NVME, "size": f"{database.wal_volume_gb}Gi"},
                "affinity": {
                    "enablePodAntiAffinity": True,
                    "podAntiAffinityType": "required",
                    "topologyKey": "kubernetes.io/hostname",
                    "nodeSelector": dict(placement.node_selector),
                    "tolerations": [dict(t) for t in placement.tolerations],
                },
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                "plugins": [{"name": BarmanCloud.plugin, "isWALArchiver": True, "parameters": {"barmanObjectName": self.archive()}}],
            },
        )  # fmt: skip

    def _dump(self, scope: Construct, ctx: ClusterContext) -> None:
        """pg_dump (custom format) of Harbor's database from a standby, to the second target."""
        site = ctx.site
        second = site.services.backups.second
        name = self.dump_name(second.name)
        (access,) = self.second_copy(ctx)
        credentials = f"{name}-s3"
        VaultSecret(
            scope, "DumpKey", name=credentials, namespace=self.namespace, store=ctx.store,
            key=access.vault_key, properties=["access_key", "secret_key"],
            template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
        )  # fmt: skip
        second_target.second_ca_secret(
            scope, "SecondCA", site=site, namespace=self.namespace, store=ctx.store
        )
        dump = f"{OUTPUT_DIR}/{self.database}.dump"
        producer = Producer(
            container={
                "name": "dump",
                "image": ctx.image("postgresql").ref,
                "command": ["pg_dump", "--format=custom", f"--file={dump}", self.database],
                "env": [
                    {
                        "name": "PGHOST",
                        "value": f"{self.cluster}-r",
                    },  # any instance: a standby takes the load
                    {"name": "PGUSER", "value": self.owner},
                    {"name": "PGSSLMODE", "value": "require"},
                    {
                        "name": "PGPASSWORD",
                        "valueFrom": {"secretKeyRef": {"name": self.app_secret(), "key": "password"}},
                    },
                ],
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                "securityContext": {
                    **RESTRICTED_CONTAINER,
                    "runAsUser": POSTGRES_UID,
                    "readOnlyRootFilesystem": True,
                },
                "volumeMounts": [output_mount()],
            },
            file=f"{self.database}.dump",
            suffix=".dump",
            runs_as=POSTGRES_UID,
        )
        endpoint = second_target.second_endpoint(site)
        HostBackup(
            scope, "Dump", name=name, namespace=self.namespace, cluster=ctx.cluster.name,
            schedule=self.spec(site).dump.schedule, prefix=self.dump_prefix,
            target=S3Target(endpoint.host, endpoint.region, second.bucket_of(self.dump_prefix), credentials,
                            second_target.CA_SECRET),
            producer=producer, curl=ctx.image("curl"), placement=ctx.system_placement,
        )  # fmt: skip


def _lost_node_section(scope: ClusterScope, db: type[PostgresDatabase]) -> str:
    """What a lost node costs the database, and what to do when the node does not come back."""
    database = db.spec(scope.site)
    pool = scope.cluster.system_pool
    ns, name, consumer = db.namespace, db.cluster, db.consumer.name
    return f"""
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


def _restore_section(scope: ClusterScope, db: type[PostgresDatabase]) -> str:
    """A restore to a point in time from the archive in AIStor, or from the second target's dump."""
    site = scope.site
    database = db.spec(site)
    pool = scope.cluster.system_pool
    second = site.services.backups.second
    dump_bucket = second.bucket_of(db.cluster)
    ns, name, consumer = db.namespace, db.cluster, db.consumer.name
    restored, restored_db = f"{name}-restore", f"{db.database}_restored"
    return f"""
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
bucket's owner: `aws --endpoint-url {second_target.second_endpoint(site).url} s3 cp
s3://{dump_bucket}/{db.cluster}/{scope.cluster.name}/<newest>.dump {db.cluster}.dump`, then from `primary=` on.{(" " + db.after_aistor_loss) if db.after_aistor_loss else ""}
"""
