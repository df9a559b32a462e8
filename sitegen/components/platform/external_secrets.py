"""`external-secrets`: the controller that writes every credential of the site from the vault."""

from __future__ import annotations

from urllib.parse import urlsplit

from sitegen.components.base import WORLD, ChartComponent, Flow, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform import PROJECT
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.values import Placed, Resources, placed, requests


class Webhook(Placed):
    replicaCount: int
    resources: Resources


class CertController(Placed):
    resources: Resources


class ExternalSecretsValues(Placed):
    installCRDs: bool = True
    replicaCount: int = 2
    resources: Resources
    webhook: Webhook
    certController: CertController


class ExternalSecrets(ChartComponent):
    name = "external-secrets"
    chart = "external-secrets"
    serves = (
        "external-secrets.io/v1",
        "external-secrets.io/v1alpha1",
        "generators.external-secrets.io/v1alpha1",
    )
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "external-secrets"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        vault = urlsplit(ctx.site.secrets.vault.server)
        return [Flow(WORLD, (vault.port or 443,), "the site vault")]

    def values(self, ctx: ClusterContext) -> ExternalSecretsValues:
        system = placed(ctx.system_placement)
        return ExternalSecretsValues(
            resources=requests("100m", "128Mi", "512Mi"),
            webhook=Webhook(replicaCount=2, resources=requests("50m", "64Mi", "256Mi"), **system),
            certController=CertController(resources=requests("50m", "64Mi", "256Mi"), **system),
            **system,
        )
