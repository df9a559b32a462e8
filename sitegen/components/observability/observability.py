"""`observability`: what the charts cannot express: Cilium's pod monitors, the site's alert rules and
dashboards, and the credentials the observability charts read (all from the vault).

On the hub: the rules (for every cluster of the variant: the others' agents write to the hub),
dashboards, Grafana's admin, Loki's S3 keys and the AIStor CA, the Loki gateway's users and its
clients' pair, the telemetry door's htpasswd. On any other cluster: the basic-auth pair its agents
deliver with, and the site CA's certificate.
"""

from __future__ import annotations

from constructs import Construct
from constructs import gpu_node_guard as guard
from constructs.edge import SITE_CA_CERT_VAULT_KEY
from constructs.monitoring import CILIUM_TARGETS, DashboardReader, Dashboards, PodMonitors, PodTarget
from constructs.node_faults import FabricPool
from constructs.secrets import VaultSecret
from constructs.site_alerts import BackupWatch, DatabaseWatch, GuardWatch, SiteAlerts, SiteRisks
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.gpu.gpu_health import NAMESPACE as GPU_HEALTH
from sitegen.components.gpu.gpu_node_guard import GpuNodeGuard, guard_conditions
from sitegen.components.observability import PROJECT
from sitegen.components.observability.grafana import (
    ADMIN_SECRET,
    ADMIN_VAULT_KEY,
    OIDC_SECRET,
    OIDC_SECRET_KEY,
    OIDC_VAULT_KEY,
    SERVICE_ACCOUNT,
    Grafana,
)
from sitegen.components.observability.grafana_database import GrafanaDatabase
from sitegen.components.observability.kube_prometheus_stack import (
    ALERTMANAGER_CONFIG,
    ALERTMANAGER_VAULT_KEY,
    NAMESPACE,
    KubePrometheusStack,
)
from sitegen.components.observability.loki import (
    GATEWAY_USERS,
    GATEWAY_USERS_VAULT_KEY,
    LOKI_CLIENT,
    LOKI_CLIENT_VAULT_KEY,
    S3_SECRET,
    S3_VAULT_KEY,
    Loki,
)
from sitegen.components.observability.otel_gateway import OtelGateway
from sitegen.components.observability.otel_node import OtelNode
from sitegen.components.observability.telemetry import (
    CLIENT_VAULT_KEY,
    HTPASSWD_VAULT_KEY,
    REMOTE_WRITE_SECRET,
    SITE_CA_KEY,
    SITE_CA_SECRET,
    TELEMETRY_USERS,
)
from sitegen.components.platform.external_secrets import ExternalSecrets
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes import etcd_backup
from sitegen.components.platform_nodes.etcd_backup import EtcdBackup
from sitegen.components.registry.harbor_database import HarborDatabase
from sitegen.components.storage.aistor import ca_secret as aistor_ca
from sitegen.components.storage.postgres import CloudNativePg
from sitegen.model import Site, VariantLayout, paths


class Observability(RenderedComponent):
    name = "observability"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (KubePrometheusStack, SecretStore)
    before = (Loki, Grafana)  # they read the credentials written here
    namespace = NAMESPACE
    skip_dry_run = True

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        PodMonitors(scope, "Cilium", namespace=self.namespace, targets=CILIUM_TARGETS)
        if ctx.has(CloudNativePg):  # the operator's, and each database's instances'
            databases = [
                PodTarget(
                    "cloudnative-pg",
                    CloudNativePg.namespace,
                    {"app.kubernetes.io/name": "cloudnative-pg"},
                    "metrics",
                ),
                *(
                    PodTarget(db.cluster, db.namespace, {"cnpg.io/cluster": db.cluster}, "metrics")
                    for db in DATABASES
                    if ctx.has(db)
                ),
            ]
            PodMonitors(scope, "Databases", namespace=self.namespace, targets=databases)
        if ctx.has(ExternalSecrets):  # externalsecret_status_condition: ExternalSecretNotReady
            eso = ctx.get(ExternalSecrets).namespace
            target = PodTarget(
                "external-secrets", eso, {"app.kubernetes.io/name": "external-secrets"}, "metrics"
            )
            PodMonitors(scope, "ExternalSecrets", namespace=self.namespace, targets=[target])
        if ctx.has(Grafana):
            self._hub(scope, ctx)
        else:
            self._agent_credentials(scope, ctx)

    def _agent_credentials(self, scope: Construct, ctx: ClusterContext) -> None:
        """A cluster without the stack: the credentials its agents deliver to the hub with, in each
        namespace that has one (Prometheus here, the log collector among the node agents)."""
        namespaces = [self.namespace, *([ctx.get(OtelNode).namespace] if ctx.has(OtelNode) else [])]
        for namespace in namespaces:
            VaultSecret(
                scope,
                f"RemoteWrite-{namespace}",
                name=REMOTE_WRITE_SECRET,
                namespace=namespace,
                store=ctx.store,
                key=CLIENT_VAULT_KEY,
                properties=["username", "password"],
                template={
                    "username": "{{ .username }}",
                    "password": "{{ .password }}",
                    "basic": '{{ printf "%s:%s" .username .password | b64enc }}',
                },
            )
            if ctx.site.services.certificates.internal_ca:
                # the certificate only, never the key
                VaultSecret(
                    scope,
                    f"SiteCA-{namespace}",
                    name=SITE_CA_SECRET,
                    namespace=namespace,
                    store=ctx.store,
                    key=SITE_CA_CERT_VAULT_KEY,
                    properties=[SITE_CA_KEY],
                )

    def _hub(self, scope: Construct, ctx: ClusterContext) -> None:
        grafana = ctx.get(Grafana)
        DashboardReader(
            scope,
            "DashboardReader",
            namespace=self.namespace,
            account=SERVICE_ACCOUNT,
            account_namespace=grafana.namespace,
        )
        SiteAlerts(scope, "Alerts", namespace=self.namespace, risks=site_risks(ctx.site, ctx.variant))
        # the Applications' sync and health, failed syncs and spoke connections (the application
        # controller), the ApplicationSets' generation (the applicationset controller): the GitOps alerts
        argocd = ctx.site.gitops.argocd.namespace
        controllers = [
            PodTarget(name, argocd, {"app.kubernetes.io/name": name}, "metrics")
            for name in ("argocd-application-controller", "argocd-applicationset-controller")
        ]
        PodMonitors(scope, "ArgoCd", namespace=self.namespace, targets=controllers)
        VaultSecret(
            scope,
            "AlertmanagerConfig",
            name=ALERTMANAGER_CONFIG,
            namespace=self.namespace,
            store=ctx.store,
            key=ALERTMANAGER_VAULT_KEY,
            properties=["alertmanager.yaml"],
        )
        self._grafana(scope, ctx)
        self._loki_credentials(scope, ctx)
        if ctx.variant.spokes:
            # htpasswd lines ({SHA}) of the clients that deliver telemetry from the other clusters
            VaultSecret(
                scope,
                "TelemetryUsers",
                name=TELEMETRY_USERS,
                namespace=ctx.get(OtelGateway).namespace,
                store=ctx.store,
                key=HTPASSWD_VAULT_KEY,
                properties=[".htpasswd"],
            )

    def _grafana(self, scope: Construct, ctx: ClusterContext) -> None:
        """The site's dashboards and Grafana's own credentials: its admin and its OIDC client."""
        grafana = ctx.get(Grafana).namespace
        Dashboards(scope, "Dashboards", namespace=grafana, dashboards=dict(ctx.site.dashboards))
        VaultSecret(
            scope,
            "GrafanaAdmin",
            name=ADMIN_SECRET,
            namespace=grafana,
            store=ctx.store,
            key=ADMIN_VAULT_KEY,
            properties=["admin-user", "admin-password"],
        )
        VaultSecret(
            scope,
            "GrafanaOidc",
            name=OIDC_SECRET,
            namespace=grafana,
            store=ctx.store,
            key=OIDC_VAULT_KEY,
            properties=[OIDC_SECRET_KEY],
        )

    def _loki_credentials(self, scope: Construct, ctx: ClusterContext) -> None:
        """Loki's S3 keys and the AIStor CA, its gateway's users, and the pair each of its clients
        (Grafana, the telemetry gateway) reads and writes logs with."""
        grafana = ctx.get(Grafana).namespace
        loki = ctx.get(Loki).namespace
        VaultSecret(
            scope,
            "LokiS3",
            name=S3_SECRET,
            namespace=loki,
            store=ctx.store,
            key=S3_VAULT_KEY,
            properties=["access_key", "secret_key"],
            template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
        )
        aistor_ca(scope, "LokiAIStorCA", namespace=loki, store=ctx.store)
        VaultSecret(
            scope,
            "LokiGatewayUsers",
            name=GATEWAY_USERS,
            namespace=loki,
            store=ctx.store,
            key=GATEWAY_USERS_VAULT_KEY,
            properties=[".htpasswd"],
        )
        for client in sorted({grafana, ctx.get(OtelGateway).namespace}):
            VaultSecret(
                scope,
                f"LokiClient-{client}",
                name=LOKI_CLIENT,
                namespace=client,
                store=ctx.store,
                key=LOKI_CLIENT_VAULT_KEY,
                properties=["username", "password"],
                template={
                    "LOKI_USERNAME": "{{ .username }}",
                    "LOKI_PASSWORD": "{{ .password }}",
                    "basic": '{{ printf "%s:%s" .username .password | b64enc }}',
                },
            )


def site_risks(site: Site, variant: VariantLayout) -> SiteRisks:
    """The risks of every cluster of the variant: the hub evaluates the rules, on its own series and on
    those the other clusters' agents write to it."""
    pools = [p for c in variant.clusters for p in c.pools]
    return SiteRisks(
        gpus_per_node={
            p.name: (p.hardware.gpu.count, tuple(h.name for h in p.hosts))
            for p in pools
            if p.hardware.gpu is not None
        },
        fabric_pools=tuple(
            FabricPool(p.name, tuple(nic.name for nic in site.fabric.nics[p.name]))
            for p in pools
            if p.name in site.fabric.nics
        ),
        aistor_parity=site.aistor_layout().parity
        if any(p.name == site.storage.aistor.pool for p in pools)
        else None,
        health_namespace=GPU_HEALTH if any(p.hardware.gpu for p in pools) else None,
        health_max_age_days=site.services.health.max_age_days,
        policy_audit=site.network.kubernetes.network_policy == "audit",
        backups=_backups(site),
        databases=_databases(site),
        spoke_token_days=site.gitops.argocd.spoke_token_days if variant.spokes else None,
        runbook=str(paths.in_repo(paths.bootstrap_dir(variant.name) / paths.RUNBOOK)),
        guards=tuple(
            GuardWatch(
                GpuNodeGuard.namespace,
                guard.NAME,
                site.services.health.auto_cordon_max_nodes,
                tuple(sorted(guard_conditions(site, c).items())),
            )
            for c in variant.clusters
            if any(p.hardware.gpu for p in c.pools)
        ),
    )


DATABASES = (HarborDatabase, GrafanaDatabase)  # the site's PostgreSQL databases (storage/database.py)
BACKUP_MARGIN_SECONDS = 3600  # a run takes time, and Prometheus scrapes every so often


def _databases(site: Site) -> tuple[DatabaseWatch, ...]:
    return tuple(
        DatabaseWatch(
            db.namespace,
            db.cluster,
            db.spec(site).instances,
            db.spec(site).archive_timeout_minutes * 60,
            db.spec(site).backups.longest_gap_seconds + BACKUP_MARGIN_SECONDS,
        )
        for db in DATABASES
    )


def _backups(site: Site) -> tuple[BackupWatch, ...]:
    backups = site.services.backups
    margin = BACKUP_MARGIN_SECONDS
    second = backups.second
    etcd_second, pki_second = etcd_backup.second_names(second.name)
    cronjobs = (
        (etcd_backup.NAME, "the etcd snapshot", backups.etcd, EtcdBackup.namespace),
        (etcd_second, f"the etcd snapshot to {second.name}", second.etcd, EtcdBackup.namespace),
        (pki_second, f"the PKI archive to {second.name}", second.pki, EtcdBackup.namespace),
        *((db.dump_name(second.name), f"the dump of {db.name} to {second.name}", db.spec(site).dump, db.namespace)
          for db in DATABASES),
    )  # fmt: skip
    schedules = (
        ("platform", backups.velero.platform),
        ("tenants", backups.velero.tenants),
        (second.name, second.velero),
    )
    return (
        *(
            BackupWatch("cronjob", name, subject, schedule.longest_gap_seconds + margin, namespace)
            for name, subject, schedule, namespace in cronjobs
        ),
        *(
            BackupWatch("velero", name, f"Velero's {name} backup", schedule.longest_gap_seconds + margin)
            for name, schedule in schedules
        ),
    )
