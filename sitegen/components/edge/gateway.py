"""`gateway`: the site's ClusterIssuer, the Gateway with its certificate and Envoy data plane, a
listener for every web front end a component of the cluster declares (`Component.routes`); and
`gateway-routes`: the HTTPRoutes to those front ends, after the apps that serve them.
"""

from __future__ import annotations

from constructs import Construct
from constructs.ca_expiry import NAME as CA_EXPIRY
from constructs.ca_expiry import SCHEDULE as CA_EXPIRY_SCHEDULE
from constructs.ca_expiry import WARN_DAYS, CaExpiryCheck
from constructs.edge import (
    HTTPS_PORT,
    ISSUING_CA_SECRET,
    ISSUING_CA_STEP,
    Route,
    SiteGateway,
    SiteIssuer,
    SiteRoutes,
)
from constructs.site_watches import ExpiryWatch, Watch
from sitegen.components.base import Component, Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge import PROJECT
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.envoy_gateway import EnvoyGateway
from sitegen.components.flows import Flow, RemoteAccess
from sitegen.components.networking.cilium_lb import CiliumLb
from sitegen.components.platform.secret_store import SecretStore
from sitegen.model.cron import longest_gap_seconds

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
    images = {"curl": "the issuing CA's expiry check (its busybox)"}

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(route.namespace, (), f"route {route.name}") for route in site_routes(ctx)]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def watches(self, scope: ClusterScope) -> list[Watch]:
        if not scope.site.services.certificates.internal_ca:
            return []
        return [ExpiryWatch(
            CertManager.namespace, CA_EXPIRY, "the issuing CA or the site CA above it", "IssuingCa",
            WARN_DAYS, ISSUING_CA_STEP, longest_gap_seconds(CA_EXPIRY_SCHEDULE),
        )]  # fmt: skip

    def remote_access(self, scope: ClusterScope) -> RemoteAccess | None:
        return RemoteAccess((f"{scope.site.services.gateway.address}/32",), (HTTPS_PORT,))

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        SiteIssuer(
            scope,
            "Issuer",
            certificates=ctx.site.services.certificates,
            namespace=ctx.get(CertManager).namespace,
            store=ctx.store,
            gateway=(GATEWAY, self.namespace),
        )
        if ctx.site.services.certificates.internal_ca:  # the CA is the RUNBOOK's, outside cert-manager
            CaExpiryCheck(
                scope, "CaExpiry", namespace=ctx.get(CertManager).namespace, secret=ISSUING_CA_SECRET,
                image=ctx.image("curl"), placement=ctx.system_placement,
            )  # fmt: skip
        SiteGateway(
            scope,
            "Gateway",
            namespace=self.namespace,
            placement=ctx.system_placement,
            address=str(ctx.site.services.gateway.address),
            routes=site_routes(ctx),
            cluster_domain=ctx.cluster.spec.dns_domain,
        )


class GatewayRoutes(RenderedComponent):
    """The HTTPRoutes (and their SecurityPolicies) of the site's front ends, in an app after every app
    that serves one: Envoy Gateway v1.9.0 reports a route whose backend Service is not there
    ResolvedRefs=False (BackendNotFound), which Argo CD v3.4.7's HTTPRoute check reads as Degraded; in
    the gateway app, before the front ends' waves, that app would never be Healthy and those waves
    would never start."""

    name = "gateway-routes"
    project = PROJECT
    layer = Layer.SERVICES
    after = (Gateway,)
    namespace = EnvoyGateway.namespace
    skip_dry_run = True

    def dependencies(self, ctx: ClusterContext) -> tuple[type[Component], ...]:
        return (Gateway, *sorted({type(c) for c in ctx.components if c.routes(ctx)}, key=lambda t: t.name))

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        SiteRoutes(
            scope, "Routes", gateway=(GATEWAY, self.namespace), routes=site_routes(ctx), store=ctx.store
        )
