"""Default deny in every namespace the site creates, and exactly the flows the components declare
(NET-001, NET-002), checked on the rendered policies; Cilium audits or enforces them per config."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import yaml

from sitegen.check.netpol import End, PolicyView
from sitegen.components.networking.cilium import HUBBLE_SERVER_PORT
from sitegen.components.platform.metrics_server import KUBELET_PORT
from sitegen.tree.documents import Document, load_tree

from .conftest import DIST, findings, invoke_sitegen, validate

ONE = DIST / "one-cluster/apps/ai/network-policies"


def _docs():
    return [d for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"]


def _view():
    return PolicyView(_docs())


def test_declared_flows_pass_and_the_rest_is_denied():
    view = _view()
    tenant, platform = (
        End(namespace="ai-research"),
        ["harbor", "argocd", "monitoring", "external-secrets", "loki"],
    )
    assert view.allows(End(namespace="loki"), End(namespace="aistor"))  # chunks in S3
    assert view.allows(End(namespace="grafana"), End(namespace="loki"))
    assert view.allows(End(namespace="monitoring"), End(namespace="harbor"))  # scraping
    assert view.allows(End(namespace="external-secrets"), End(entity="world"), 8200)  # the vault
    assert not view.allows(End(namespace="external-secrets"), End(entity="world"), 22)
    assert view.allows(End(entity="kube-apiserver"), End(namespace="cert-manager"))  # its webhook
    assert view.allows(End(entity="world"), End(namespace="envoy-gateway-system"))
    assert view.allows(tenant, End(namespace="envoy-gateway-system")) and view.allows(
        tenant, End(namespace="aistor")
    )
    for other in platform:
        assert not view.allows(tenant, End(namespace=other)), other
        assert not view.allows(End(namespace="harbor"), End(namespace="ai-research")) or other != "harbor"
    assert not view.allows(tenant, End(entity="kube-apiserver"))
    assert not view.allows(End(entity="world"), End(namespace="harbor"))  # only through the Gateway


def test_enforced_by_default_and_audit_is_an_alerted_opt_in(site, config_copy, tmp_path):
    """Cilium drops what the policies do not allow; audit (nothing dropped) only when config says so,
    with an alert that fires while it lasts."""
    from .conftest import edit_yaml

    values = yaml.safe_load((DIST / "one-cluster/values/ai/cilium.yaml").read_text())
    assert values["policyAuditMode"] is False
    assert site.network.kubernetes.network_policy == "enforce"
    rules = (DIST / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml").read_text()
    assert "NetworkPolicyAuditMode" not in rules
    edit_yaml(config_copy, "network.yaml", lambda n: n["kubernetes"].update(network_policy="audit"))
    out = tmp_path / "dist"
    assert (
        invoke_sitegen("synth", "--config", config_copy, "--variant", "one-cluster", "--out", out).exit_code
        == 0
    )
    assert yaml.safe_load((out / "one-cluster/values/ai/cilium.yaml").read_text())["policyAuditMode"] is True
    assert (
        "NetworkPolicyAuditMode"
        in (out / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml").read_text()
    )


def test_a_tenant_pod_reaches_no_platform_service(site):
    """With the policies in force: a tenant pod does not reach Harbor's Redis, Loki, Prometheus or
    Alertmanager, nor Argo CD's repo server."""
    view = _view()
    tenant = End(namespace=next(iter(site.tenants)))
    for namespace, port in [
        ("harbor", 6379),
        ("loki", 3100),
        ("monitoring", 9090),
        ("monitoring", 9093),
        ("argocd", 8081),
    ]:
        assert not view.allows(tenant, End(namespace=namespace), port), (namespace, port)


def test_a_namespace_without_default_deny(tree):
    (tree / "one-cluster/apps/ai/network-policies/harbor.networkpolicy.default-deny.yaml").unlink()
    result = validate(tree)
    assert result.exit_code == 1
    assert (
        "Namespace harbor: NET-001 default-deny: $: namespace harbor has no default-deny NetworkPolicy"
        in result.stdout
    )


def test_a_declared_flow_the_policy_lost(tree):
    path = tree / "one-cluster/apps/ai/network-policies/loki.ciliumnetworkpolicy.site-flows.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["egress"] = [r for r in doc["spec"]["egress"] if "aistor" not in str(r)]
    path.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert result.exit_code == 1 and "NET-002 declared-flows" in result.stdout
    assert "loki -> aistor is declared but not allowed" in result.stdout


def test_a_tenant_reaching_a_platform_namespace(tree):
    path = tree / "one-cluster/apps/ai/network-policies/ai-research.ciliumnetworkpolicy.site-flows.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["egress"].append(
        {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "harbor"}}]}
    )
    path.write_text(yaml.safe_dump(doc))
    other = tree / "one-cluster/apps/ai/network-policies/harbor.ciliumnetworkpolicy.site-flows.yaml"
    doc = yaml.safe_load(other.read_text())
    doc["spec"]["ingress"].append(
        {"fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "ai-research"}}]}
    )
    other.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert (
        result.exit_code == 1
        and "tenant ai-research reaches harbor, which it did not declare" in result.stdout
    )


def test_the_model_servers_tenant_reaches_the_hugging_face_hub_and_no_other_address():
    """The serving tenant's one way out is the hub (toFQDNs, the names Cilium's DNS proxy learns): not
    any address on 443, which would let every pod of the namespace send data anywhere."""
    view, tenant = _view(), End(namespace="ai-research")
    for host in ("huggingface.co", "cdn-lfs-us-1.hf.co", "cas-bridge.xethub.hf.co", "cdn-lfs.huggingface.co"):
        assert view.allows(tenant, End(entity="world", name=host), 443), host
    assert not view.allows(tenant, End(entity="world", name="huggingface.co"), 80)
    for elsewhere in ("pastebin.com", "huggingface.co.evil.example", "a.b.huggingface.co"):
        assert not view.allows(tenant, End(entity="world", name=elsewhere), 443), elsewhere
    assert not view.allows(tenant, End(entity="world"), 443)  # an address no name was resolved for


def test_a_tenant_that_reaches_any_address_outside(tree):
    path = tree / "one-cluster/apps/ai/network-policies/ai-research.ciliumnetworkpolicy.site-flows.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["egress"].append(
        {"toEntities": ["world"], "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]}
    )
    path.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert result.exit_code == 1
    assert "tenant ai-research reaches any address outside, beyond the names it declared" in result.stdout


def test_the_flows_list_reads_back_what_the_policies_allow():
    result = invoke_sitegen("flows", "--dist", DIST)
    assert result.exit_code == 0, result.output
    rows = {tuple(line.split()[:3]): line for line in result.output.splitlines()[2:]}
    shown = json.loads(invoke_sitegen("flows", "--dist", DIST, "--format", "json").output)
    (egress,) = [
        r["egress_to"] for r in shown if (r["variant"], r["namespace"]) == ("one-cluster", "ai-research")
    ]
    assert "DNS" in egress and "aistor" in egress and "argocd" not in egress  # S3 yes, platform no
    assert "huggingface.co:443" in egress and "world" not in egress  # the hub by name, nowhere else
    loki = rows[("one-cluster", "ai", "loki")]
    assert loki.split("  ")[-1].strip().startswith("grafana")  # ingress: its datasource first
    assert ("two-cluster", "aistor", "argocd-manager") in rows  # a spoke's namespaces too


def test_kube_system_lets_in_dns_the_api_server_and_prometheus_and_out_what_its_pods_need():
    """kube-system is default-deny like the site's namespaces (security review M8: a tenant that
    widened its own egress reached Hubble Relay's plaintext flows, hubble-ui and metrics-server): DNS
    from the whole cluster, the API server (metrics-server's APIService), Prometheus; out, the API
    server, the kubelets (metrics-server), the agents' Hubble servers (Relay) and DNS upstream."""
    widened = Document(
        PurePosixPath("one-cluster/apps/ai/tenant-ai-research/widened.yaml"),
        0,
        {
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "widened", "namespace": "ai-research"},
            "spec": {"endpointSelector": {}, "egress": [{"toEndpoints": [{"matchExpressions": [
                {"key": "k8s:io.kubernetes.pod.namespace", "operator": "Exists"}]}]}]},
        },
    )  # fmt: skip
    view, system = PolicyView([*_docs(), widened]), End(namespace="kube-system")
    tenant = End(namespace="ai-research")
    assert "kube-system" in view.denied
    assert view.allows(tenant, system, 53)
    for port in (4245, 8081, 10250, 9153):  # Relay, hubble-ui, metrics-server, CoreDNS metrics
        assert not view.allows(tenant, system, port), port
    assert view.allows(End(namespace="monitoring"), system, 9153)
    assert view.allows(End(entity="kube-apiserver"), system, KUBELET_PORT)
    assert view.allows(End(entity="nodes"), system, 53)  # host-network pods' cluster DNS
    assert not view.allows(End(entity="world"), system, 53)
    for port in (KUBELET_PORT, HUBBLE_SERVER_PORT):
        assert view.allows(system, End(entity="nodes"), port)
    assert not view.allows(system, End(entity="nodes"), 22)
    # a resolver on a node: the DNS rule comes after the rule of the nodes' other ports, and is read
    assert view.allows(system, End(entity="nodes"), 53)
    assert view.allows(system, End(entity="world"), 53) and not view.allows(system, End(entity="world"), 443)
    assert view.allows(system, End(entity="kube-apiserver"))
    assert not view.allows(system, End(namespace="harbor"), 6379)


def test_kube_systems_declared_ports_are_the_rendered_ones():
    """The flows open the ports the components listen on: each agent's Hubble server as cilium-config
    gives it, the kubelet's as the kubelet configurations leave it (its default, 10250)."""
    config = yaml.safe_load_all(
        (DIST / "one-cluster/apps/ai/cilium/kube-system.configmap.cilium-config.yaml").read_text()
    )
    (data,) = [d["data"] for d in config if d]
    assert data["hubble-listen-address"] == f":{HUBBLE_SERVER_PORT}"
    kubelets = [
        doc
        for path in sorted((DIST / "one-cluster/kubeadm/ai").glob("kubelet-*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "KubeletConfiguration"
    ]
    assert kubelets and all(doc.get("port", 10250) == KUBELET_PORT for doc in kubelets)


def test_kube_system_without_default_deny(tree):
    (tree / "one-cluster/apps/ai/network-policies/kube-system.networkpolicy.default-deny.yaml").unlink()
    assert any("NET-001 default-deny" in line and "namespace kube-system has no default-deny" in line
               for line in findings(tree))  # fmt: skip
