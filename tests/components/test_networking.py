"""Networking and hardware components: Cilium, its LB pool, NFD, the Network Operator and the rails."""

from __future__ import annotations

import ipaddress
import json

from sitegen.check.placement import tolerated_taints
from sitegen.components.hardware.node_feature_discovery import NodeFeatureDiscoveryWorker
from sitegen.components.networking.cilium import Cilium
from sitegen.components.networking.cilium_lb import CiliumLb
from sitegen.components.networking.fabric import Fabric
from sitegen.components.networking.network_operator import NetworkOperator
from sitegen.components.tenants.tenant import Tenant

from .conftest import by_kind, context, render


def test_cilium_talks_to_the_vip_on_the_ethernet_bond_and_reaches_every_node(two, small):
    for cluster in ("ai", "aistor"):
        values = render(two, cluster, Cilium)
        spec = small.clusters[cluster]
        assert values["k8sServiceHost"] == str(spec.api.vip)
        assert values["cluster"] == {"name": cluster, "id": spec.id}
        assert values["devices"] == [small.network.kubernetes.interface]
        pools = context(two, cluster).cluster.pools
        assert tolerated_taints(values, pools) == {t for p in pools for t in p.taints}


def test_load_balancer_pool_is_the_clusters_range(two, small):
    """The whole range, but where AIStor's servers take its top as their S3 front doors."""
    (pool,) = by_kind(render(two, "ai", CiliumLb), "CiliumLoadBalancerIPPool")
    assert pool["spec"]["blocks"] == [{"cidr": str(small.clusters["ai"].load_balancer_cidr)}]
    (pool,) = by_kind(render(two, "aistor", CiliumLb), "CiliumLoadBalancerIPPool")
    usable = list(ipaddress.ip_network(small.clusters["aistor"].load_balancer_cidr).hosts())
    servers = small.pools[small.storage.aistor.pool].count
    assert pool["spec"]["blocks"] == [{"start": str(usable[0]), "stop": str(usable[-servers - 1])}]


def test_nfd_worker_tolerates_every_taint_of_its_cluster(one):
    values = render(one, "ai", NodeFeatureDiscoveryWorker)
    pools = context(one, "ai").cluster.pools
    assert tolerated_taints(values["worker"], pools) == {t for p in pools for t in p.taints}


def test_network_operator_only_where_the_fabric_is(two, small):
    assert context(two, "ai").has(NetworkOperator) and context(two, "aistor").has(NetworkOperator)
    assert render(two, "ai", NetworkOperator)["nfd"]["enabled"] is False


def test_rail_pools_give_every_node_a_block_inside_the_rail(one, small):
    docs = render(one, "ai", Fabric)
    pools = {p["metadata"]["name"]: p["spec"] for p in by_kind(docs, "IPPool")}
    assert set(pools) == {f"rail-{r.lower()}" for r in small.fabric.rails}
    for rail, cfg in small.fabric.rails.items():
        spec = pools[f"rail-{rail.lower()}"]
        nodes = sum(small.pools[p].count for p in small.fabric.nics if rail in small.fabric.rails_of(p))
        assert spec["perNodeBlockSize"] * nodes <= ipaddress.ip_network(spec["subnet"]).num_addresses
        assert spec["subnet"] == str(cfg.cidr)


def test_every_tenant_gets_a_network_per_gpu_rail(one, small):
    networks = by_kind(render(one, "ai", Fabric), "IPoIBNetwork")
    # the tenants' namespaces and the GPU health checks': every namespace Kueue queues GPU jobs in
    tenants = [t.tenant for t in context(one, "ai").all(Tenant)] + ["gpu-health"]
    gpu_rails = small.fabric.rails_of("gpu")
    assert sorted(n["metadata"]["name"] for n in networks) == sorted(
        f"{t}-rail-{r.lower()}" for t in tenants for r in gpu_rails
    )
    assert all(json.loads(n["spec"]["ipam"])["type"] == "nv-ipam" for n in networks)
