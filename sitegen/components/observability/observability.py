"""`observability`: what the charts cannot express: Cilium's, the databases' and External Secrets' pod
monitors, the site's alert rules and dashboards (on the hub: the rules cover every cluster of the
variant, whose agents write to the hub), and the Secrets the observability charts read from the vault,
which each chart's component declares (`vault_secrets`).
"""

from __future__ import annotations

from constructs import Construct
from constructs import gpu_node_guard as guard
from constructs.monitoring import CILIUM_TARGETS, DashboardReader, Dashboards, PodMonitors, PodTarget
from constructs.node_faults import FabricPool
from constructs.site_alerts import BackupWatch, DatabaseWatch, GuardWatch, SiteAlerts, SiteRisks
from sitegen.components.base import Layer, RenderedComponent, VaultSecretSpec
from sitegen.components.context import ClusterContext
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.components.gpu.gpu_node_guard import GpuNodeGuard, guard_conditions
from sitegen.components.observability import PROJECT
from sitegen.components.observability.grafana import SERVICE_ACCOUNT, Grafana
from sitegen.components.observability.grafana_database import GrafanaDatabase
from sitegen.components.observability.kube_prometheus_stack import NAMESPACE, KubePrometheusStack
from sitegen.components.observability.loki import Loki
from sitegen.components.platform.external_secrets import ExternalSecrets
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes import etcd_backup
from sitegen.components.platform_nodes.etcd_backup import EtcdBackup
from sitegen.components.registry.harbor_database import HarborDatabase
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
        if ctx.is_hub:
            self._hub(scope, ctx)
        self._credentials(scope, ctx)

    def _credentials(self, scope: Construct, ctx: ClusterContext) -> None:
        """The Secrets the observability charts read (their `vault_secrets`): charts render no
        ExternalSecret of ours, so their project's app writes them, before they start."""
        declared: dict[tuple[str, str], VaultSecretSpec] = {}
        for component in ctx.components:
            if component.project is not PROJECT:
                continue
            for spec in component.vault_secrets(ctx):
                # two clients of one namespace may declare the same Secret; never two different ones
                if declared.setdefault((spec.namespace, spec.name), spec) != spec:
                    raise ValueError(
                        f"{component.name}: Secret {spec.namespace}/{spec.name} is declared twice"
                    )
        for spec in declared.values():
            spec.render(scope, ctx.store)

    def _hub(self, scope: Construct, ctx: ClusterContext) -> None:
        """The site's alert rules and dashboards, and the monitors of Argo CD's controllers."""
        grafana = ctx.get(Grafana).namespace
        DashboardReader(
            scope,
            "DashboardReader",
            namespace=self.namespace,
            account=SERVICE_ACCOUNT,
            account_namespace=grafana,
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
        Dashboards(scope, "Dashboards", namespace=grafana, dashboards=dict(ctx.site.dashboards))


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
        health_namespace=GpuHealth.namespace if any(p.hardware.gpu for p in pools) else None,
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
