"""A flow to a component of another cluster of the variant goes to that component's addresses there, on
its ports (`Component.remote_access`): AIStor's S3 front doors on 443, the hub's Gateway on 443. Never to
any address of the world on any port, which let every S3 consumer of the AI cluster (a tenant among
them) send anything anywhere."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from constructs.s3_front_doors import front_door_addresses
from sitegen.check.netpol import End, PolicyView
from sitegen.components.edge.gateway import Gateway
from sitegen.components.networking.network_policies import NetworkPolicies
from sitegen.components.storage.aistor import AIStor
from sitegen.compose.apps import variant_apps
from sitegen.model import load_site, resolve
from sitegen.tree.documents import load_tree

from .conftest import CONFIG, DIST

CONSUMERS = ("ai-research", "loki", "harbor", "velero", "grafana")  # of AIStor's S3, on `ai`


def _view(variant: str, cluster: str) -> PolicyView:
    return PolicyView([d for d in load_tree(DIST) if d.variant == variant and d.cluster == cluster])


def _front_doors(site) -> list[str]:
    hosts = [h.name for h in site.pools[site.storage.aistor.pool].hosts]
    return [str(a) for a in front_door_addresses(site.clusters["aistor"].load_balancer_cidr, hosts).values()]


def test_s3_consumers_of_another_cluster_reach_the_front_doors_on_443(site):
    view, doors = _view("two-cluster", "ai"), _front_doors(site)
    general = str(next(site.clusters["aistor"].load_balancer_cidr.hosts()))  # its general pool's first
    for namespace in CONSUMERS:
        source = End(namespace=namespace)
        for address in doors:
            assert view.allows(source, End(entity="world", address=address), 443), (namespace, address)
        assert not view.allows(source, End(entity="world", address=doors[0]), 22), namespace
    for namespace in ("ai-research", "loki"):  # neither declares the world: nothing else outside
        source = End(namespace=namespace)
        assert not view.allows(source, End(entity="world", address=general), 443), namespace
        assert not view.allows(source, End(entity="world", address="192.0.2.10"), 443), namespace
        assert not view.allows(source, End(entity="world"), None), namespace


def test_the_tenants_rule_names_the_front_doors_exactly(site):
    declared = NetworkPolicies.cluster_flows(variant_apps(site, resolve(site, "two-cluster")).contexts[0])
    (peer,) = [p for p in declared["ai-research"].egress if p.cidrs]
    assert declared["ai-research"].egress[peer] == {443}
    covered = sorted(str(a) for c in peer.cidrs for a in ip_network(c))
    assert covered == sorted(_front_doors(site))
    assert not [p for p in declared["ai-research"].egress if p.entity == "world" and not p.names]


def test_a_spoke_tenant_reaches_the_hubs_gateway_at_its_address():
    site = load_site(CONFIG / "examples" / "three-cluster")
    apps = variant_apps(site, resolve(site, "three-cluster"))
    gpu = next(ctx for ctx in apps.contexts if ctx.cluster.name == "gpu")
    assert gpu.find(Gateway) is None  # the hub's
    egress = NetworkPolicies.cluster_flows(gpu)["ai-research"].egress
    gateway = [p for p in egress if p.cidrs == (f"{site.services.gateway.address}/32",)]
    assert [egress[p] for p in gateway] == [{443}]
    assert not [p for p in egress if p.entity == "world" and not p.names]


def test_a_remote_component_that_declares_no_access_is_a_bug_not_the_world(site, monkeypatch):
    monkeypatch.setattr(AIStor, "remote_access", lambda self, scope: None)
    ai = variant_apps(site, resolve(site, "two-cluster")).contexts[0]
    with pytest.raises(ValueError, match="aistor of aistor declares no remote_access: "):
        NetworkPolicies.cluster_flows(ai)


def test_a_spokes_log_agents_reach_the_hubs_gateway_and_nothing_else_outside(site):
    view, agents = _view("two-cluster", "aistor"), End(namespace="monitoring-agents")
    gateway = str(site.services.gateway.address)
    assert view.allows(agents, End(entity="world", address=gateway), 443)
    assert not view.allows(agents, End(entity="world", address=gateway), 80)
    assert not view.allows(agents, End(entity="world", address="192.0.2.10"), 443)
    assert not view.allows(agents, End(entity="world"), 443)
