"""Edge components: cert-manager, Envoy Gateway, and the Gateway with the routes components declare."""

from __future__ import annotations

from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.envoy_gateway import EnvoyGateway
from sitegen.components.edge.gateway import Gateway, GatewayRoutes
from sitegen.components.platform.argo_cd import ArgoCd

from .conftest import by_kind, context, render


def test_gateway_routes_are_the_ones_components_declare(one, two):
    for apps, expected in (
        (one, {"argocd", "grafana", "harbor", "llm"}),
        (two, {"argocd", "grafana", "harbor", "llm", "telemetry"}),
    ):
        docs = render(apps, "ai", Gateway)
        assert {r["metadata"]["name"] for r in by_kind(docs, "HTTPRoute")} == {"site-https-redirect"}
        routes = {r["metadata"]["name"] for r in by_kind(render(apps, "ai", GatewayRoutes), "HTTPRoute")}
        assert routes == expected
        declared = {r.name for c in context(apps, "ai").components for r in c.routes(context(apps, "ai"))}
        assert routes == declared
        (cert,) = [c for c in by_kind(docs, "Certificate") if c["metadata"]["name"] == "site-gateway"]
        assert len(cert["spec"]["dnsNames"]) == len(expected)


def test_telemetry_door_asks_for_basic_authentication(two):
    policies = {
        p["spec"]["targetRefs"][0]["name"]: p["spec"]
        for p in by_kind(render(two, "ai", GatewayRoutes), "SecurityPolicy")
    }
    assert "basicAuth" in policies["telemetry"]
    assert "apiKeyAuth" in policies["llm"]  # the model API: a client key per request


def test_edge_runs_on_the_hub_only(two):
    for kind in (CertManager, EnvoyGateway, Gateway):
        assert context(two, "ai").has(kind) and not context(two, "aistor").has(kind)
    assert render(two, "ai", CertManager)["crds"] == {"enabled": True, "keep": True}


def test_argo_cd_is_https_up_to_its_server(one):
    """With the internal CA the site CA issues argocd-server's certificate for its Service name, the
    server serves it (not --insecure) and Envoy verifies it with that CA: TLS from client to pod."""
    docs = render(one, "ai", Gateway)
    (policy,) = [p for p in by_kind(docs, "BackendTLSPolicy") if p["metadata"]["namespace"] == "argocd"]
    (cert,) = [c for c in by_kind(docs, "Certificate") if c["metadata"]["namespace"] == "argocd"]
    assert policy["spec"]["targetRefs"] == [{"group": "", "kind": "Service", "name": "argocd-server"}]
    assert policy["spec"]["validation"]["hostname"] in cert["spec"]["dnsNames"]
    assert policy["spec"]["validation"]["caCertificateRefs"][0]["name"] == cert["spec"]["secretName"]
    assert cert["spec"]["secretName"] == "argocd-server-tls"
    assert render(one, "ai", ArgoCd)["configs"]["params"]["server.insecure"] == "false"
    (route,) = [
        r for r in by_kind(render(one, "ai", GatewayRoutes), "HTTPRoute") if r["metadata"]["name"] == "argocd"
    ]
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "argocd-server", "port": 443}]


def test_grafana_is_https_up_to_its_pod(one):
    """The same for Grafana: its certificate from the site CA for its Service, served by Grafana itself,
    probed over HTTPS, scraped with the CA, verified by Envoy; no reload calls to plain localhost."""
    from sitegen.components.observability.grafana import Grafana

    docs = render(one, "ai", Gateway)
    (policy,) = [p for p in by_kind(docs, "BackendTLSPolicy") if p["metadata"]["namespace"] == "grafana"]
    (cert,) = [c for c in by_kind(docs, "Certificate") if c["metadata"]["namespace"] == "grafana"]
    assert policy["spec"]["validation"]["hostname"] in cert["spec"]["dnsNames"]
    values = render(one, "ai", Grafana)
    server = values["grafana.ini"]["server"]
    assert server["protocol"] == "https" and server["cert_file"].startswith(
        values["extraSecretMounts"][0]["mountPath"]
    )
    assert values["extraSecretMounts"][0]["secretName"] == cert["spec"]["secretName"]
    assert (
        values["readinessProbe"]["httpGet"]["scheme"]
        == values["livenessProbe"]["httpGet"]["scheme"]
        == "HTTPS"
    )
    assert values["serviceMonitor"]["scheme"] == "https"
    assert values["sidecar"]["dashboards"]["skipReload"] is True
