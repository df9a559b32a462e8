"""`secret-store`: the cluster's ClusterSecretStore, its view of the site vault."""

from __future__ import annotations

from constructs import Construct
from constructs.secrets import SecretStore as VaultStore
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform import PROJECT
from sitegen.components.platform.external_secrets import SERVICE_ACCOUNT, ExternalSecrets


class SecretStore(RenderedComponent):
    name = "secret-store"
    project = PROJECT
    layer = Layer.RESOURCES
    skip_dry_run = True
    after = (ExternalSecrets,)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        VaultStore(
            scope,
            "Store",
            secrets=ctx.site.secrets,
            cluster=ctx.cluster.name,
            namespace=ctx.get(ExternalSecrets).namespace,
            service_account=SERVICE_ACCOUNT,
        )
