"""What the hub's site alerts watch is declared by the component that owns it (`Component.watches`):
a new component with a backup, a database or a guard is watched with no change to the observability
component, once however many clusters run it."""

from __future__ import annotations

from constructs import Construct
from constructs.site_alerts import BackupWatch, DatabaseWatch, GuardWatch
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
