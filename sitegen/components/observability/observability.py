"""`observability`: what the charts cannot express: Cilium's, the databases' and External Secrets' pod
monitors, the site's alert rules and dashboards (on the hub: the rules cover every cluster of the
variant, whose agents write to the hub), and the Secrets the observability charts read from the vault,
which each chart's component declares (`vault_secrets`).
"""

from __future__ import annotations

from constructs import Construct
from constructs.monitoring import CILIUM_TARGETS, DashboardReader, Dashboards, PodMonitors, PodTarget
from constructs.site_alerts import SiteAlerts
from constructs.site_watches import DatabaseWatch, SiteRisks, Watch
from sitegen.components.base import Component, Layer, RenderedComponent, VaultSecretSpec
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.observability import PROJECT
from sitegen.components.observability.grafana import SERVICE_ACCOUNT, Grafana
from sitegen.components.observability.kube_prometheus_stack import NAMESPACE, KubePrometheusStack
from sitegen.components.observability.loki import Loki
from sitegen.components.platform.external_secrets import ExternalSecrets
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.storage.postgres import CloudNativePg
from sitegen.model import ClusterLayout, paths


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
                    PodTarget(db.name, db.namespace, {"cnpg.io/cluster": db.name}, "metrics")
                    for db in _declared(ctx, ctx.cluster)
                    if isinstance(db, DatabaseWatch)
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
        SiteAlerts(scope, "Alerts", namespace=self.namespace, risks=site_risks(ctx))
        # the Applications' sync and health, failed syncs and spoke connections (the application
        # controller), the ApplicationSets' generation (the applicationset controller): the GitOps alerts
        argocd = ctx.site.gitops.argocd.namespace
        controllers = [
            PodTarget(name, argocd, {"app.kubernetes.io/name": name}, "metrics")
            for name in ("argocd-application-controller", "argocd-applicationset-controller")
        ]
        PodMonitors(scope, "ArgoCd", namespace=self.namespace, targets=controllers)
        Dashboards(scope, "Dashboards", namespace=grafana, dashboards=dict(ctx.site.dashboards))


def _declared(ctx: ClusterContext, cluster: ClusterLayout) -> list[Watch]:
    """What the components of `cluster` declare for the site alerts to watch (`watches`)."""
    scope = ClusterScope(ctx.site, ctx.variant, cluster)
    return [
        watch
        for component in ctx.variant_components[cluster.name]
        if isinstance(component, Component)
        for watch in component.watches(scope)
    ]


def site_risks(ctx: ClusterContext) -> SiteRisks:
    """The risks of every cluster of the variant: the hub evaluates the rules, on its own series and on
    those the other clusters' agents write to it."""
    return SiteRisks.gathered(
        (w for cluster in ctx.variant.clusters for w in _declared(ctx, cluster)),
        runbook=str(paths.in_repo(paths.bootstrap_dir(ctx.variant.name) / paths.RUNBOOK)),
    )
