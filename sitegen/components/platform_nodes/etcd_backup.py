"""`etcd-backup`: each cluster's etcd, snapshotted on schedule into the site's backup bucket in AIStor
(see constructs/etcd_backup.py); the RUNBOOK's day-2 part restores from those snapshots."""

from __future__ import annotations

from collections.abc import Mapping

from constructs import Construct
from constructs.etcd_backup import NAME, PREFIX, EtcdSnapshots
from constructs.secrets import VaultSecret
from sitegen.components.base import (
    WORLD,
    Flow,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    RenderedComponent,
    S3Access,
    S3Grant,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes import PROJECT
from sitegen.components.storage.aistor import CA_SECRET, ca_secret, s3_endpoint

S3_USER = "etcd-backup"
CREDENTIALS = "etcd-backup-s3"


class EtcdBackup(RenderedComponent):
    name = "etcd-backup"
    project = PROJECT
    layer = Layer.RESOURCES
    namespace = "etcd-backup"
    security = NamespaceSecurity(
        "privileged", "reads etcd's client certificate from the host and reaches etcd on the host network"
    )
    images = {"etcd": "etcdctl for the snapshots", "curl": "the snapshots' upload to AIStor"}
    after = (Namespaces, SecretStore)
    skip_dry_run = True  # its ExternalSecrets arrive with External Secrets' CRDs
    talks_to_api = False

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        # beside etcd, on purpose: the control plane only
        return {
            self.object_key("CronJob", NAME): NodeAgent(
                frozenset({scope.cluster.control_plane.name}), "snapshots the etcd member of its node"
            )
        }

    def privileged_workloads(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            self.object_key("CronJob", NAME): "root (no capabilities) to read etcd's client key from the "
            "host, host network to reach etcd on loopback"
        }

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(WORLD, (443,), "snapshots to AIStor (host network)")]

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        backups = ctx.site.services.backups
        # write-only: a stolen key puts snapshots but neither reads nor deletes them; expiry is the
        # bucket's lifecycle rule
        grant = S3Grant(backups.bucket, f"{PREFIX}/", "write-only")
        return [S3Access(S3_USER, (grant,), expire=((f"{PREFIX}/", backups.etcd.retention_days),))]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        backups = ctx.site.services.backups
        s3 = s3_endpoint(ctx.site, ctx.cluster)
        (access,) = self.s3_access(ctx)
        VaultSecret(
            scope,
            "Credentials",
            name=CREDENTIALS,
            namespace=self.namespace,
            store=ctx.store,
            key=access.vault_key,
            properties=["access_key", "secret_key"],
            template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
        )
        ca_secret(scope, "AIStorCA", namespace=self.namespace, store=ctx.store)
        EtcdSnapshots(
            scope,
            "Snapshots",
            namespace=self.namespace,
            cluster=ctx.cluster.name,
            schedule=backups.etcd.schedule,
            bucket=backups.bucket,
            s3_host=s3.host,
            s3_region=s3.region,
            credentials=CREDENTIALS,
            ca_secret=CA_SECRET,
            etcd=ctx.image("etcd"),
            curl=ctx.image("curl"),
            placement=ctx.cluster.control_plane.placement,
        )
