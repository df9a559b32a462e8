"""Platform services on the system pool: certificates, the Gateway, CoreDNS placement, metrics-server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sitegen.compose.variant import synthesize
from sitegen.model import load_site

from .conftest import DIST, edit_yaml

INFRA = {"node-role.kubernetes.io/infra": "true"}


def _one(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return doc


GATEWAY = DIST / "one-cluster/apps/ai/gateway"
ROUTES = DIST / "one-cluster/apps/ai/gateway-routes"  # after the front ends they route to


def test_cluster_issuer_kind_is_config(config_copy):
    issuer = _one(GATEWAY / "clusterissuer.site.yaml")
    assert issuer["spec"] == {"ca": {"secretName": "issuing-ca"}}
    assert (GATEWAY / "cert-manager.externalsecret.issuing-ca.yaml").is_file()
    edit_yaml(config_copy, "services.yaml", lambda d: d["certificates"].update(issuer="acme"))
    files = synthesize(load_site(config_copy), ["one-cluster"])
    (acme,) = [f for f in files if f.path.name == "clusterissuer.site.yaml"]
    solver = acme.documents[0]["spec"]["acme"]["solvers"][0]["http01"]["gatewayHTTPRoute"]
    assert solver["parentRefs"] == [{"name": "site", "namespace": "envoy-gateway-system", "kind": "Gateway"}]
    assert not [f for f in files if f.path.name == "cert-manager.externalsecret.issuing-ca.yaml"]


def test_gateway_terminates_tls_with_a_cert_manager_certificate(site):
    gateway = _one(GATEWAY / "envoy-gateway-system.gateway.site.yaml")
    https = [listener for listener in gateway["spec"]["listeners"] if listener["protocol"] == "HTTPS"]
    certificate = _one(GATEWAY / "envoy-gateway-system.certificate.site-gateway.yaml")
    assert {h["tls"]["certificateRefs"][0]["name"] for h in https} == {certificate["spec"]["secretName"]}
    assert sorted(h["hostname"] for h in https) == certificate["spec"]["dnsNames"]
    assert site.gitops.argocd.hostname in certificate["spec"]["dnsNames"]
    route = _one(ROUTES / "argocd.httproute.argocd.yaml")
    assert route["spec"]["hostnames"] == [site.gitops.argocd.hostname]
    # with the internal CA the server serves HTTPS too, verified by Envoy (BackendTLSPolicy)
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "argocd-server", "port": 443}]
    argocd = _one(DIST / "one-cluster/values/ai/argo-cd.yaml")
    assert (
        argocd["fullnameOverride"] == "argocd" and argocd["configs"]["params"]["server.insecure"] == "false"
    )


def test_harbors_pull_credential_crosses_the_pod_network_over_tls_only():
    """The Gateway reaches Harbor's nginx on its HTTPS port, verifying the certificate the site CA issued
    for the Service; nginx serves it. Before, the robot's basic auth went to port 80 in clear."""
    harbor = DIST / "one-cluster/apps/ai/harbor"
    route = _one(ROUTES / "harbor.httproute.harbor.yaml")
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "harbor", "port": 443}]
    policy = _one(GATEWAY / "harbor.backendtlspolicy.harbor.yaml")["spec"]
    assert policy["targetRefs"] == [{"group": "", "kind": "Service", "name": "harbor"}]
    assert policy["validation"]["hostname"] == "harbor.harbor.svc"
    certificate = _one(GATEWAY / "harbor.certificate.harbor-tls.yaml")["spec"]
    assert "harbor.harbor.svc" in certificate["dnsNames"]
    (https,) = [p for p in _one(harbor / "harbor.service.harbor.yaml")["spec"]["ports"] if p["port"] == 443]
    nginx = _one(harbor / "harbor.deployment.harbor-nginx.yaml")["spec"]["template"]["spec"]
    assert https["targetPort"] == 8443 and {"containerPort": 8443} in nginx["containers"][0]["ports"]
    assert {"name": "certificate", "secret": {"secretName": certificate["secretName"]}} in nginx["volumes"]
    core = _one(harbor / "harbor.deployment.harbor-core.yaml")["spec"]["template"]["spec"]
    # with nginx's TLS the chart mounts the portal's CA download in core, from caSecretName
    assert {"name": "ca-download", "secret": {"secretName": certificate["secretName"]}} in core["volumes"]


def test_envoy_data_plane_on_infra_with_its_configured_address(site):
    proxy = _one(GATEWAY / "envoy-gateway-system.envoyproxy.site.yaml")["spec"]["provider"]["kubernetes"]
    assert proxy["envoyDeployment"]["pod"]["nodeSelector"] == INFRA
    assert proxy["envoyService"]["annotations"] == {
        "lbipam.cilium.io/ips": str(site.services.gateway.address)
    }


def test_coredns_kept_on_the_system_pool():
    ai = _one(DIST / "two-cluster/apps/ai/coredns/kube-system.deployment.coredns.yaml")
    aistor = _one(DIST / "two-cluster/apps/aistor/coredns/kube-system.deployment.coredns.yaml")
    assert ai["spec"]["template"]["spec"]["nodeSelector"] == INFRA
    assert aistor["spec"]["template"]["spec"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert "Prune=false" in ai["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]


def test_chart_components_on_the_system_pool():
    for app, paths in {
        "cert-manager": [("nodeSelector",), ("webhook", "nodeSelector"), ("cainjector", "nodeSelector")],
        "envoy-gateway": [("deployment", "pod", "nodeSelector")],
        "metrics-server": [("nodeSelector",)],
    }.items():
        values = _one(DIST / f"one-cluster/values/ai/{app}.yaml")
        for path in paths:
            node: Any = values
            for key in path:
                node = node[key]
            assert node == INFRA, (app, path)
