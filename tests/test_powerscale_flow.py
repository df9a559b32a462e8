"""The PowerScale CSI controller reaches the OneFS API, by the name config gives, on the port the driver
is configured with: not any address outside on any port."""

from __future__ import annotations

from sitegen.check.netpol import End, PolicyView
from sitegen.components.networking.network_policies import NetworkPolicies
from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.compose.apps import variant_apps
from sitegen.model import load_site, resolve
from sitegen.tree.documents import load_tree

from .conftest import DIST, edit_yaml


def test_the_controller_reaches_the_onefs_api_by_name_on_its_port(site):
    view = PolicyView([d for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"])
    isilon = End(namespace=CsiIsilon.namespace)
    api = End(entity="world", name="powerscale-mgmt.hpc.example.internal")
    assert site.storage.powerscale.endpoint == "https://powerscale-mgmt.hpc.example.internal"
    assert view.allows(isilon, api, 8080)
    assert not view.allows(isilon, api, 22)
    assert not view.allows(isilon, End(entity="world", name="example.com"), 8080)
    assert not view.allows(isilon, End(entity="world"), None)
    creds = next(d for d in load_tree(DIST) if d.variant == "one-cluster" and d.name == "csi-isilon-creds")
    assert "endpointPort: 8080" in str(creds.body)  # the port the policy opens is the driver's


def test_an_api_given_by_address_is_reached_on_its_port_only(config_copy):
    edit_yaml(config_copy, "storage.yaml", lambda d: d["powerscale"].update(endpoint="https://10.10.0.50"))
    site = load_site(config_copy)
    ctx = variant_apps(site, resolve(site, "one-cluster")).contexts[0]
    egress = NetworkPolicies.cluster_flows(ctx)[CsiIsilon.namespace].egress
    assert [(p.entity, p.names, ports) for p, ports in egress.items()] == [("world", (), {8080})]
