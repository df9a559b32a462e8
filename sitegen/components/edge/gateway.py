"""`gateway`: the site's ClusterIssuer, the Gateway with its certificate and Envoy data plane, and an
HTTPRoute for every web front end a component of the cluster declares (`Component.routes`).
"""

from __future__ import annotations

from constructs import Construct
from constructs.edge import Route, SiteGateway, SiteIssuer
from sitegen.components.base import Flow, Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.envoy_gateway import EnvoyGateway
from sitegen.components.networking.cilium_lb import CiliumLb
from sitegen.components.platform.secret_store import SecretStore

GATEWAY = "site"


def site_routes(ctx: ClusterContext) -> list[Route]:
    """Every front end the cluster's components serve through the Gateway."""
    return [route for component in ctx.components for route in component.routes(ctx)]


class Gateway(RenderedComponent):
    name = "gateway"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (
        CertManager,
        EnvoyGateway,
        SecretStore,
        CiliumLb,
    )  # the issuer's CA from the vault; the Gateway's address
    namespace = EnvoyGateway.namespace
    skip_dry_run = True

    exposed = True  # its proxies take the site's web traffic, and the nodes' image pulls

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(route.namespace, (), f"route {route.name}") for route in site_routes(ctx)]

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
            routes=site_routes(ctx),
            store=ctx.store,
            cluster_domain=ctx.cluster.spec.dns_domain,
        )
