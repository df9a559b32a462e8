"""What the hub's site alerts watch is declared by the component that owns it (`Component.watches`):
a new component with a backup, a database or a guard is watched with no change to the observability
component, once however many clusters run it."""

from __future__ import annotations

from constructs import Construct
from constructs.site_watches import BackupWatch, DatabaseWatch, GuardWatch
from sitegen.components.base import Layer, Project, RenderedComponent
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.observability.observability import Observability, site_risks
from sitegen.compose.apps import variant_apps
from sitegen.model import resolve

DEMO = Project("demo", "test components")
NIGHTLY = BackupWatch("cronjob", "ledger-dump", "the ledger's dump", 86400, "ledger")


class Ledger(RenderedComponent):
    """A component of every cluster with a nightly dump of its own."""

    name = "ledger"
    project = DEMO
    layer = Layer.SERVICES
    namespace = "ledger"

    def watches(self, scope: ClusterScope) -> list[BackupWatch]:
        return [NIGHTLY]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        pass


def _hub(site, variant: str, registry=COMPONENTS) -> ClusterContext:
    apps = variant_apps(site, resolve(site, variant), registry)
    (hub,) = [ctx for ctx in apps.contexts if ctx.is_hub]
    assert hub.has(Observability)
    return hub


def test_a_new_components_backup_is_watched_once_across_clusters(site):
    risks = site_risks(_hub(site, "two-cluster", (*COMPONENTS, Ledger)))
    assert [w for w in risks.backups if w == NIGHTLY] == [NIGHTLY]
    # CronJobs first, then Velero's Schedules (one alert each, counted by cluster)
    kinds = [w.kind for w in risks.backups]
    assert kinds == sorted(kinds) and kinds[-1] == "velero"
    assert NIGHTLY not in site_risks(_hub(site, "two-cluster")).backups


def test_the_shipped_components_declare_their_backups_databases_and_guards(site):
    backups = site.services.backups
    second = backups.second.name
    risks = site_risks(_hub(site, "two-cluster"))
    assert {(w.kind, w.name) for w in risks.backups} == {
        ("cronjob", "etcd-backup"),
        ("cronjob", f"etcd-backup-{second}"),
        ("cronjob", f"pki-backup-{second}"),
        ("cronjob", f"grafana-db-dump-{second}"),
        ("cronjob", f"harbor-db-dump-{second}"),
        ("velero", "platform"),
        ("velero", "tenants"),
        ("velero", second),
    }
    etcd = next(w for w in risks.backups if w.name == "etcd-backup")
    assert etcd.stale_after_seconds == backups.etcd.longest_gap_seconds + 3600
    assert {(w.namespace, w.name) for w in risks.databases} == {
        ("grafana", "grafana-db"),
        ("harbor", "harbor-db"),
    }
    assert all(isinstance(w, DatabaseWatch) for w in risks.databases)
    # the guard runs where the GPUs are: one cluster of two
    (guard,) = risks.guards
    assert isinstance(guard, GuardWatch) and guard.max_nodes == site.services.health.auto_cordon_max_nodes


def test_a_database_pod_monitor_follows_its_declaration(docs):
    """The instances' PodMonitors come from the databases' watches, in the cluster that runs them."""
    monitored = {
        (d.body["metadata"]["name"], tuple(d.body["spec"]["namespaceSelector"]["matchNames"]))
        for d in docs
        if d.variant == "one-cluster" and d.kind == "PodMonitor" and d.app == "observability"
    }
    assert {("grafana-db", ("grafana",)), ("harbor-db", ("harbor",))} <= monitored


def test_a_concern_is_watched_only_where_its_component_runs(site):
    """The hub's rules follow the components, not the model: without the GPU health checks there is
    no staleness alert for them; without AIStor no erasure alerts; a one-cluster site has no spoke token."""
    from sitegen.components.gpu.gpu_health import GpuHealth
    from sitegen.components.storage.aistor import AIStor

    full = site_risks(_hub(site, "two-cluster"))
    assert full.health_namespace == GpuHealth.namespace
    assert full.health_max_age_days == site.services.health.max_age_days
    assert full.aistor_parity == site.aistor_layout().parity
    assert full.spoke_token_days == site.gitops.argocd.spoke_token_days
    pools = [p for c in resolve(site, "two-cluster").clusters for p in c.pools]
    assert set(full.gpus_per_node) == {p.name for p in pools if p.hardware.gpu is not None}
    assert [f.name for f in full.fabric_pools] == [p.name for p in pools if p.name in site.fabric.nics]

    without = site_risks(
        _hub(site, "two-cluster", tuple(k for k in COMPONENTS if k not in (GpuHealth, AIStor)))
    )
    assert without.health_namespace is None and without.aistor_parity is None
    assert site_risks(_hub(site, "one-cluster")).spoke_token_days is None


def test_policy_audit_is_watched_while_cilium_audits(site):
    audit = site.model_copy(
        update={
            "network": site.network.model_copy(
                update={"kubernetes": site.network.kubernetes.model_copy(update={"network_policy": "audit"})}
            )
        }
    )
    assert site_risks(_hub(audit, "two-cluster")).policy_audit
    assert site_risks(_hub(site, "two-cluster")).policy_audit == (
        site.network.kubernetes.network_policy == "audit"
    )
