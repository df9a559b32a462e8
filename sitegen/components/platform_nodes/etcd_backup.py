"""`etcd-backup`: the control plane's state off its hosts. Each cluster's etcd, snapshotted on
schedule into the site's backup bucket in AIStor and, on a schedule of its own, into the second target
(services.backups.second), with kubeadm's CAs encrypted beside it there (see constructs/etcd_backup.py
and constructs/host_backup.py); the RUNBOOK's day-2 part restores from either."""

from __future__ import annotations

from collections.abc import Mapping

from constructs import Construct
from constructs.etcd_backup import ETCD_PREFIX, PKI_PREFIX, etcd_snapshot, pki_archive
from constructs.host_backup import HostBackup, Producer, S3Target
from constructs.objects import api_object
from constructs.secrets import VaultSecret
from constructs.site_watches import BackupWatch, Watch
from sitegen.components import second_target
from sitegen.components.base import Layer, NamespaceSecurity, NodeAgent, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes import PROJECT
from sitegen.components.s3 import S3Access, S3Grant
from sitegen.components.storage.aistor import CA_SECRET, AIStor, ca_secret

NAME = "etcd-backup"  # into AIStor
S3_USER = "etcd-backup"
PKI_USER = "pki-backup"
CREDENTIALS = "etcd-backup-s3"
SERVICE_ACCOUNT = "etcd-backup"  # its CronJobs' pods: no token, no RBAC


def second_names(second: str) -> tuple[str, str]:
    """The etcd and the PKI CronJobs of the second target, by its name."""
    return f"{NAME}-{second}", f"pki-backup-{second}"


def _credentials(suffix: str) -> str:
    return f"{suffix}-s3"


class EtcdBackup(RenderedComponent):
    name = "etcd-backup"
    project = PROJECT
    layer = Layer.RESOURCES
    namespace = "etcd-backup"
    security = NamespaceSecurity(
        "privileged", "reads etcd's client certificate and the host's encrypted PKI archive from the host "
        "and reaches etcd on the host network"
    )  # fmt: skip
    images = {
        "etcd": "etcdctl for the snapshots",
        "curl": "the uploads to AIStor and the second target (the PKI archive's freshness check too)",
    }
    after = (Namespaces, SecretStore)
    skip_dry_run = True  # its ExternalSecrets arrive with External Secrets' CRDs
    talks_to_api = False

    def _jobs(self, scope: ClusterScope) -> dict[str, tuple[str, str]]:
        """Each CronJob: what it does on its node, and why it runs as root there."""
        etcd_second, pki_second = second_names(scope.site.services.backups.second.name)
        etcd = (
            "snapshots the etcd member of its node",
            "root (no capabilities) to read etcd's client key from the host, host network to reach etcd "
            "on loopback",
        )
        pki = ("uploads the PKI archive its node's timer encrypted", "reads the host's encrypted PKI archive "
               "(hostPath, read-only), as nobody")  # fmt: skip
        return {NAME: etcd, etcd_second: etcd, pki_second: pki}

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        return [OperatorStep(Stage.DAY_2_BACKUPS, "etcd: snapshot and restore", _day2_section(scope))]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        backups = scope.site.services.backups
        second = backups.second
        etcd_second, pki_second = second_names(second.name)
        return [
            BackupWatch("cronjob", name, subject, schedule.longest_gap_seconds, self.namespace)
            for name, subject, schedule in (
                (NAME, "the etcd snapshot", backups.etcd),
                (etcd_second, f"the etcd snapshot to {second.name}", second.etcd),
                (pki_second, f"the PKI archive to {second.name}", second.pki),
            )
        ]

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        # beside etcd and the CAs, on purpose: the control plane only
        pool = frozenset({scope.cluster.control_plane.name})
        return {
            self.object_key("CronJob", job): NodeAgent(pool, does)
            for job, (does, _) in self._jobs(scope).items()
        }

    def privileged_workloads(self, scope: ClusterScope) -> Mapping[str, str]:
        return {self.object_key("CronJob", job): why for job, (_, why) in self._jobs(scope).items()}

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(WORLD, (443,), "snapshots to AIStor (host network)"),
            second_target.second_flow(ctx.site, "snapshots and the PKI archive to the second target"),
        ]

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        backups = ctx.site.services.backups
        # write-only: a stolen key puts snapshots but neither reads nor deletes them; expiry is the
        # bucket's lifecycle rule
        grant = S3Grant(backups.bucket, f"{ETCD_PREFIX}/", "write-only")
        return [S3Access(S3_USER, (grant,), expire=((f"{ETCD_PREFIX}/", backups.etcd.retention_days),))]

    def second_copy(self, ctx: ClusterContext) -> list[S3Access]:
        second = ctx.site.services.backups.second
        return [
            S3Access(
                user,
                (S3Grant(second.bucket_of(prefix), f"{prefix}/", "write-only"),),
                expire=((f"{prefix}/", schedule.retention_days),),
                target=second.name,
            )
            for user, prefix, schedule in (
                (S3_USER, ETCD_PREFIX, second.etcd),
                (PKI_USER, PKI_PREFIX, second.pki),
            )
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        backups = ctx.site.services.backups
        second = backups.second
        s3 = AIStor.s3_endpoint(ctx.site, ctx.cluster)
        (aistor_access,) = self.s3_access(ctx)
        etcd_access, pki_access = self.second_copy(ctx)
        for id, secret, access in (
            ("Credentials", CREDENTIALS, aistor_access),
            ("SecondEtcdCredentials", _credentials(second_names(second.name)[0]), etcd_access),
            ("SecondPkiCredentials", _credentials(second_names(second.name)[1]), pki_access),
        ):
            VaultSecret(
                scope, id, name=secret, namespace=self.namespace, store=ctx.store, key=access.vault_key,
                properties=["access_key", "secret_key"],
                template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
            )  # fmt: skip
        ca_secret(scope, namespace=self.namespace, store=ctx.store)
        second_target.second_ca_secret(
            scope, "SecondCA", site=ctx.site, namespace=self.namespace, store=ctx.store
        )
        endpoint = second_target.second_endpoint(ctx.site)
        etcd_second, pki_second = second_names(second.name)
        etcd = etcd_snapshot(ctx.image("etcd"))
        jobs: tuple[tuple[str, str, str, S3Target, Producer, str], ...] = (
            (NAME, backups.etcd.schedule, ETCD_PREFIX,
             S3Target(s3.host, s3.region, backups.bucket, CREDENTIALS, CA_SECRET), etcd, "Snapshots"),
            (etcd_second, second.etcd.schedule, ETCD_PREFIX,
             S3Target(endpoint.host, endpoint.region, second.bucket_of(ETCD_PREFIX), _credentials(etcd_second),
                      second_target.CA_SECRET), etcd, "SecondSnapshots"),
            (pki_second, second.pki.schedule, PKI_PREFIX,
             S3Target(endpoint.host, endpoint.region, second.bucket_of(PKI_PREFIX), _credentials(pki_second),
                      second_target.CA_SECRET), pki_archive(ctx.image("curl")), "Pki"),
        )  # fmt: skip
        # an account of their own, which the host-access policy admits: not the namespace's `default`,
        # which any other pod of the namespace would run as
        api_object(scope, "ServiceAccount", "v1", "ServiceAccount", {"name": SERVICE_ACCOUNT, "namespace": self.namespace},
                   automountServiceAccountToken=False)  # fmt: skip
        for name, schedule, prefix, target, producer, id in jobs:
            HostBackup(
                scope, id, name=name, namespace=self.namespace, cluster=ctx.cluster.name,
                schedule=schedule, prefix=prefix, target=target, producer=producer,
                curl=ctx.image("curl"), placement=ctx.cluster.control_plane.placement,
                service_account=SERVICE_ACCOUNT,
            )  # fmt: skip


def _day2_section(scope: ClusterScope) -> str:
    """A snapshot before an upgrade, and the restores by how much of etcd is lost (one section for
    every cluster of the variant)."""
    clusters = ", ".join(f"`{c.name}` ({c.control_plane.host_span})" for c in scope.variant.clusters)
    etcd = scope.site.versions.images["etcd"].ref
    return f"""
Each cluster's etcd ({clusters}) is stacked on its control-plane nodes. Take a snapshot before every
upgrade or membership change: a run of the scheduled snapshot, off the node into the backup bucket
(`sitegen plan` lists where each schedule keeps its copies):

```sh
job=etcd-backup-$(date +%Y%m%d%H%M)
kubectl -n {EtcdBackup.namespace} create job "$job" --from=cronjob/{EtcdBackup.name}
kubectl -n {EtcdBackup.namespace} wait --for=condition=complete --timeout=15m "job/$job"
```

No host package carries etcd's tools: etcdctl runs in the etcd pods (`kubectl -n kube-system exec
etcd-<host> -- etcdctl ...`), and a restore, with the API down, runs etcdutl from the image kubeadm
runs (`ctr -n k8s.io run --rm --mount type=bind,src=/var/lib,dst=/var/lib,options=rbind:rw
{etcd} etcdutl etcdutl ...`).

- One member lost (quorum kept): Replacing a control-plane member, above.
- A majority lost (no quorum, the API is down): on one surviving member stop the static pods (move
  `/etc/kubernetes/manifests/*.yaml` aside), `etcdutl snapshot restore <snapshot> --data-dir
  /var/lib/etcd-restored --name <host> --initial-cluster <host>=https://<address>:2380
  --initial-advertise-peer-urls https://<address>:2380`, point etcd's manifest at the restored data
  dir, start it, then `kubeadm reset` and re-join every other member one at a time.
- All lost: `kubeadm init` the first control-plane node from a snapshot restored as above into
  `/var/lib/etcd` before the init (`--ignore-preflight-errors=DirAvailable--var-lib-etcd`), with the
  cluster's CAs and encryption configuration back first (the vault, or the PKI archive of the second
  target), then join the others; Argo CD reconciles whatever changed in git since the snapshot.
"""
