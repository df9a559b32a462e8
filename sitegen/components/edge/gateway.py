"""`gateway`: the site's ClusterIssuer, the Gateway with its certificate and Envoy data plane, and an
HTTPRoute for every web front end a component of the cluster declares (`Component.routes`).

Clients outside the hub trust the Gateway's certificate through the site CA (issuer internal-ca): its
certificate only, as the Secret `site-ca-cert`.
"""

from __future__ import annotations

from constructs import Construct
from constructs.edge import SiteGateway, SiteIssuer
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.envoy_gateway import EnvoyGateway
from sitegen.model import Site

GATEWAY = "site"
SITE_CA_SECRET = "site-ca-cert"
SITE_CA_KEY = "tls.crt"
SITE_CA_VAULT_KEY = "pki/site-ca"


def trusts_site_ca(site: Site) -> bool:
    """An ACME certificate chains to the public roots images already trust; the internal CA does not."""
    return site.services.certificates.issuer == "internal-ca"


class Gateway(RenderedComponent):
    name = "gateway"
    project = PROJECT
    layer = Layer.RESOURCES
    order = 4
    namespace = EnvoyGateway.namespace
    skip_dry_run = True
    after = (CertManager, EnvoyGateway)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        SiteIssuer(
            scope,
            "Issuer",
            certificates=ctx.site.services.certificates,
            namespace=ctx.get(CertManager).namespace,
            store=ctx.store,
            gateway=(GATEWAY, self.namespace),
        )
        SiteGateway(
            scope,
            "Gateway",
            namespace=self.namespace,
            placement=ctx.system_placement,
            address=str(ctx.site.services.gateway.address),
            routes=[route for component in ctx.components for route in component.routes(ctx)],
        )
