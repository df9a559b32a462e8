"""`harbor-database`: Harbor's PostgreSQL, which holds its projects, RBAC, robots (the pull robot every
host uses) and the index of every artifact: without it the blobs in AIStor are orphans.

A CloudNativePG `Cluster` of `services.registry.database.instances` on as many system-pool nodes (one
per node, required), each on its node's NVMe: a primary and standbys, a commit acknowledged once a
standby has it too (synchronous, `dataDurability: required`), so a node that dies takes no committed
transaction with it, and the operator promotes a standby in its place. Every WAL segment is archived
by the Barman Cloud plugin into the `database.bucket` of AIStor (at most `archive_timeout_minutes`
behind), with base backups on `database.backups`: any point in time within their retention comes back.
A logical dump on `database.dump` goes to the second backup target, outside AIStor's failure domain.
"""

from __future__ import annotations

from constructs import Construct
from constructs.host_backup import OUTPUT_DIR, HostBackup, Producer, S3Target, output_mount
from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from constructs.objects import RESTRICTED_CONTAINER, api_object
from constructs.secrets import VaultSecret
from sitegen.components.base import Flow, Layer, RenderedComponent, S3Access, S3Grant, State
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.registry import PROJECT
from sitegen.components.registry.harbor import (
    CORE_DATABASE,
    DATABASE_CLUSTER,
    DATABASE_OWNER,
    DATABASE_PASSWORD,
    Harbor,
)
from sitegen.components.storage import second_target
from sitegen.components.storage.aistor import CA_SECRET as AISTOR_CA
from sitegen.components.storage.aistor import AIStor, s3_endpoint
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.storage.postgres import PLUGIN, BarmanCloud, CloudNativePg

CLUSTER = DATABASE_CLUSTER
DATABASE = CORE_DATABASE
OWNER = DATABASE_OWNER
APP_SECRET = "harbor-db-app"  # the owner's credentials (basic-auth), the vault's harbor/database
VAULT_KEY = DATABASE_PASSWORD.vault_key
S3_USER = "harbor-database"
S3_SECRET = "harbor-db-s3"
ARCHIVE = f"{CLUSTER}-aistor"  # the plugin's ObjectStore: where the WAL and base backups go
DUMP_USER = "harbor-db-dump"
DUMP_PREFIX = "harbor-db"
POSTGRES_UID = 26  # the postgres user of CloudNativePG's images
CNPG_API = "postgresql.cnpg.io/v1"
BARMAN_API = "barmancloud.cnpg.io/v1"


def dump_name(second: str) -> str:
    return f"{CLUSTER}-dump-{second}"


class HarborDatabase(RenderedComponent):
    name = "harbor-database"
    project = PROJECT
    layer = Layer.SERVICES
    namespace = Harbor.namespace
    after = (CloudNativePg, BarmanCloud, LocalNvme, SecretStore)
    before = (Harbor,)  # core and the exporter connect at start
    skip_dry_run = True  # its kinds arrive with the operator, the plugin and External Secrets
    images = {
        "postgresql": "the database's instances, and pg_dump for its logical copy",
        "curl": "the upload of the logical copy to the second target",
    }

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return Harbor.applies(scope) and CloudNativePg.applies(scope)

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(AIStor, (), "the WAL archive and the base backups (S3)"),
            second_target.second_flow(ctx.site, "the logical dump to the second target"),
        ]

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        # its own bucket, whole: barman checks that the bucket exists (HeadBucket) and expires old
        # backups itself (delete markers under the bucket's lock)
        return [S3Access(S3_USER, (S3Grant(ctx.site.services.registry.database.bucket),))]

    def second_copy(self, ctx: ClusterContext) -> list[S3Access]:
        second = ctx.site.services.backups.second
        dump = ctx.site.services.registry.database.dump
        grant = S3Grant(second.bucket_of(DUMP_PREFIX), f"{DUMP_PREFIX}/", "write-only")
        return [
            S3Access(
                DUMP_USER, (grant,), expire=((f"{DUMP_PREFIX}/", dump.retention_days),), target=second.name
            )
        ]

    def state(self, ctx: ClusterContext) -> list[State]:
        database = ctx.site.services.registry.database
        second = ctx.site.services.backups.second
        return [
            State(CLUSTER, "Harbor's projects, permissions, robots and the index of every artifact", copies=(
                *(["each commit on a second instance before it is acknowledged (synchronous): a node lost "
                   "loses none"] if database.instances > 1 else []),
                f"WAL in AIStor s3://{database.bucket}/, at most {database.archive_timeout_minutes} min behind; "
                f"base backups every {database.backups.longest_gap_seconds // 3600} h at most, kept "
                f"{database.backups.retention_days} d",
                f"pg_dump on {second.name} s3://{second.bucket_of(DUMP_PREFIX)}/, every "
                f"{database.dump.longest_gap_seconds // 3600} h at most, kept {database.dump.retention_days} d",
            )),
        ]  # fmt: skip

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        database = ctx.site.services.registry.database
        VaultSecret(
            scope, "AppCredentials", name=APP_SECRET, namespace=self.namespace, store=ctx.store,
            key=VAULT_KEY, properties=["password"], secret_type="kubernetes.io/basic-auth",
            template={"username": OWNER, "password": "{{ .password }}"},
        )  # fmt: skip
        (archive_access,) = self.s3_access(ctx)
        VaultSecret(
            scope, "ArchiveKey", name=S3_SECRET, namespace=self.namespace, store=ctx.store,
            key=archive_access.vault_key, properties=["access_key", "secret_key"],
            template={"ACCESS_KEY_ID": "{{ .access_key }}", "ACCESS_SECRET_KEY": "{{ .secret_key }}"},
        )  # fmt: skip
        self._cluster(scope, ctx)
        endpoint = s3_endpoint(ctx.site, ctx.cluster)
        api_object(
            scope, "Archive", BARMAN_API, "ObjectStore", {"name": ARCHIVE, "namespace": self.namespace},
            spec={
                "retentionPolicy": f"{database.backups.retention_days}d",
                "configuration": {
                    "destinationPath": f"s3://{database.bucket}/",
                    "endpointURL": endpoint.url,
                    "endpointCA": {"name": AISTOR_CA, "key": "ca.crt"},
                    "s3Credentials": {
                        "accessKeyId": {"name": S3_SECRET, "key": "ACCESS_KEY_ID"},
                        "secretAccessKey": {"name": S3_SECRET, "key": "ACCESS_SECRET_KEY"},
                    },
                    "wal": {"compression": "gzip", "maxParallel": 4},
                    "data": {"compression": "gzip", "jobs": 2},
                },
            },
        )  # fmt: skip
        api_object(
            scope, "BaseBackups", CNPG_API, "ScheduledBackup", {"name": CLUSTER, "namespace": self.namespace},
            spec={
                # the operator's cron has seconds first
                "schedule": f"0 {database.backups.schedule}",
                "cluster": {"name": CLUSTER},
                "method": "plugin",
                "pluginConfiguration": {"name": PLUGIN},
                "backupOwnerReference": "self",
                "immediate": True,  # the first base backup at once: the archive restores nothing before it
            },
        )  # fmt: skip
        self._dump(scope, ctx)

    def _cluster(self, scope: Construct, ctx: ClusterContext) -> None:
        database = ctx.site.services.registry.database
        placement = ctx.system_placement
        api_object(
            scope, "Cluster", CNPG_API, "Cluster", {"name": CLUSTER, "namespace": self.namespace},
            spec={
                "instances": database.instances,
                "imageName": ctx.image("postgresql").ref,
                "primaryUpdateStrategy": "unsupervised",
                "enableSuperuserAccess": False,
                "bootstrap": {"initdb": {"database": DATABASE, "owner": OWNER, "secret": {"name": APP_SECRET}}},
                "postgresql": {
                    "parameters": {
                        "archive_timeout": f"{database.archive_timeout_minutes}min",
                        # core and the exporter of each replica: the chart's maxOpenConns, below
                        "max_connections": "400",
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
                "plugins": [{"name": PLUGIN, "isWALArchiver": True, "parameters": {"barmanObjectName": ARCHIVE}}],
            },
        )  # fmt: skip

    def _dump(self, scope: Construct, ctx: ClusterContext) -> None:
        """pg_dump (custom format) of Harbor's database from a standby, to the second target."""
        site = ctx.site
        second = site.services.backups.second
        name = dump_name(second.name)
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
        dump = f"{OUTPUT_DIR}/{DATABASE}.dump"
        producer = Producer(
            container={
                "name": "dump",
                "image": ctx.image("postgresql").ref,
                "command": ["pg_dump", "--format=custom", f"--file={dump}", DATABASE],
                "env": [
                    {"name": "PGHOST", "value": f"{CLUSTER}-r"},  # any instance: a standby takes the load
                    {"name": "PGUSER", "value": OWNER},
                    {"name": "PGSSLMODE", "value": "require"},
                    {
                        "name": "PGPASSWORD",
                        "valueFrom": {"secretKeyRef": {"name": APP_SECRET, "key": "password"}},
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
            file=f"{DATABASE}.dump",
            suffix=".dump",
            runs_as=POSTGRES_UID,
        )
        endpoint = second_target.second_endpoint(site)
        HostBackup(
            scope, "Dump", name=name, namespace=self.namespace, cluster=ctx.cluster.name,
            schedule=site.services.registry.database.dump.schedule, prefix=DUMP_PREFIX,
            target=S3Target(endpoint.host, endpoint.region, second.bucket_of(DUMP_PREFIX), credentials,
                            second_target.CA_SECRET),
            producer=producer, curl=ctx.image("curl"), placement=ctx.system_placement,
        )  # fmt: skip
