"""Node manifests and placement of every pool."""

from __future__ import annotations

import pytest
from cdk8s import Testing as K8sTesting  # pytest would collect a class named Testing

from constructs.node_pool import NodePool
from sitegen.model import resolve

SEED_LABELS = {
    "gpu": {
        "node-role.kubernetes.io/gpu": "true",
        "accelerator": "nvidia-b300",
        "gpu-count": "8",
        "gpu-platform": "hgx-b300",
        "network-fabric": "ndr400",
        "local-storage": "nvme",
    },
    "storage": {
        "node-role.kubernetes.io/aistor": "true",
        "storage": "aistor",
        "disk": "nvme-gen5",
        "rdma": "true",
    },
}


def _nodes(site, variant, cluster, pool):
    layout = resolve(site, variant)
    chart = K8sTesting.chart()
    NodePool(chart, pool, pool=next(c for c in layout.clusters if c.name == cluster).pool(pool))
    return K8sTesting.synth(chart)


@pytest.mark.parametrize("pool", ["gpu", "storage"])
def test_nodes_carry_exactly_the_seed_labels(site, pool):
    nodes = _nodes(site, "one-cluster", "ai", pool)
    assert len(nodes) == site.pools[pool].count
    for node in nodes:
        assert node["kind"] == "Node"
        assert node["metadata"]["labels"] == SEED_LABELS[pool]


def test_nodes_are_applied_server_side_and_never_pruned(site):
    for node in _nodes(site, "one-cluster", "ai", "compute"):
        options = node["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].split(",")
        assert sorted(options) == ["Delete=false", "Prune=false", "ServerSideApply=true"]
        assert "spec" not in node  # taints belong to kubeadm registration, see NodePool


@pytest.mark.parametrize(
    ("pool", "selector", "tolerations"),
    [
        ("infra", {"node-role.kubernetes.io/infra": "true"}, ()),
        (
            "gpu",
            {"node-role.kubernetes.io/gpu": "true"},
            ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},),
        ),
        (
            "storage",
            {"node-role.kubernetes.io/aistor": "true"},
            ({"key": "dedicated", "operator": "Equal", "value": "aistor", "effect": "NoSchedule"},),
        ),
        (
            "control-plane",
            {"node-role.kubernetes.io/control-plane": ""},
            ({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},),
        ),
    ],
)
def test_pool_placement(site, pool, selector, tolerations):
    placement = resolve(site, "one-cluster").clusters[0].pool(pool).placement
    assert placement.node_selector == selector
    assert placement.tolerations == tolerations


def test_two_cluster_variant_splits_the_pools(site):
    clusters = {c.name: c for c in resolve(site, "two-cluster").clusters}
    assert {p.name: len(p.hosts) for p in clusters["ai"].pools} == {
        "control-plane": 5,
        "infra": 5,
        "compute": 47,
        "gpu": 12,
    }
    assert {p.name: len(p.hosts) for p in clusters["aistor"].pools} == {"control-plane": 3, "storage": 30}
    carved = [h.name for h in clusters["aistor"].control_plane.hosts]
    assert carved == ["cmp48", "cmp49", "cmp50"]
    assert not set(carved) & {h.name for h in clusters["ai"].pool("compute").hosts}
