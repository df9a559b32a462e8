"""Scheduling beyond placement, as the real systems decide it: required pod affinity and anti-affinity
between workloads (kube-scheduler v1.35 InterPodAffinity), the workloads operators make of their custom
resources (prometheus-operator, Envoy Gateway), a ClusterQueue's namespaceSelector (Kueue v0.19.2), the
address Cilium's agents reach the API server at, and Multus' NetworkAttachmentDefinitions. Each defect
is put back into a copy of the committed tree and named with its app, object and reason; one bring-up
carries a harmless alternative of each and still comes up."""

from __future__ import annotations

from typing import Any

import pytest

from sitegen.check.bringup.kube import Node, PodTemplate
from sitegen.check.bringup.kueue import selects
from sitegen.check.bringup.refusals.cilium import api_server
from sitegen.check.bringup.refusals.multus import NetworksError, requested_networks
from sitegen.check.bringup.scheduling import (
    AFFINITY_REFUSED,
    ANTI_AFFINITY_REFUSED,
    EXISTING_ANTI_AFFINITY_REFUSED,
    interpod_refusal,
)
from sitegen.components.operands import hashed_name

from .bringup_cases import ONE, blocked, edited, run

APPS = "one-cluster/apps/ai"
HUBBLE_RELAY = f"{APPS}/cilium/kube-system.deployment.hubble-relay.yaml"
CILIUM_AGENT = f"{APPS}/cilium/kube-system.daemonset.cilium.yaml"
PROMETHEUS = f"{APPS}/kube-prometheus-stack/monitoring.prometheus.kube-prometheus-stack-prometheus.yaml"
CLUSTER_QUEUE = f"{APPS}/gpu-queues/clusterqueue.gpu.yaml"
RAIL_A = f"{APPS}/fabric/ipoibnetwork.ai-research-rail-a.yaml"
NCCL_JOB = f"{APPS}/tenant-ai-research/ai-research.job.nccl-allreduce.yaml"
NETWORKS = "k8s.v1.cni.cncf.io/networks"


def _edits(inputs, *changes: tuple[str, Any]) -> dict[str, Any]:
    """The inputs with every (path, change) applied to a copy of ONE's tree."""
    tree, texts = inputs[ONE]
    for where, change in changes:
        tree = edited({ONE: (tree, texts)}, ONE, where, change)
    return {**inputs, ONE: (tree, texts)}


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"] if doc["kind"] == "CronJob" else (
        doc["spec"]["template"]["spec"]
    )  # fmt: skip


def _relay_affinity(label: dict[str, str]):
    def change(doc):
        terms = _pod_spec(doc)["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        terms[0]["labelSelector"] = {"matchLabels": label}

    return change


def _agent_env(name: str, value: str):
    def change(doc):
        for c in _pod_spec(doc)["containers"] + _pod_spec(doc).get("initContainers", []):
            for env in c.get("env") or []:
                if env["name"] == name:
                    env["value"] = value

    return change


def _set(path: list[str], value: Any):
    def change(doc):
        node = doc
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value

    return change


# ---- 1. inter-pod affinity -----------------------------------------------------------------------------


def _node(name: str, **labels: str) -> Node:
    return Node(name, "pool", {"kubernetes.io/hostname": name, **labels}, [], {}, {}, ready=True)


def _pod(name: str, labels: dict[str, str], namespace: str = "a", **affinity: Any) -> PodTemplate:
    return PodTemplate("Deployment", namespace, name, 1, {"labels": labels}, {"affinity": affinity})


def _term(key: str = "kubernetes.io/hostname", **extra: Any) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": "db"}}, **extra}


NODES = {n.name: n for n in (_node("n1", zone="z1"), _node("n2", zone="z1"), _node("n3"))}
NS = {"a": {"team": "x"}, "b": {"team": "y"}}.get


def _labels(ns: str) -> dict[str, str]:
    return NS(ns) or {}


def test_required_affinity_needs_a_matching_pod_in_the_domain():
    db = _pod("db", {"app": "db"})
    web = _pod(
        "web", {"app": "web"}, podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term("zone")]}
    )
    existing = [(db, {"n1": 1})]
    assert interpod_refusal(web, NODES["n2"], existing, NODES, _labels) is None  # same zone as n1
    assert interpod_refusal(web, NODES["n3"], existing, NODES, _labels) == AFFINITY_REFUSED  # no zone label
    # the term's namespace defaults to the pod's own: a db in namespace b is not meant
    other = _pod("db", {"app": "db"}, namespace="b")
    assert interpod_refusal(web, NODES["n1"], [(other, {"n1": 1})], NODES, _labels) == AFFINITY_REFUSED
    # a namespaceSelector takes it in (`{}`: every namespace)
    anywhere = _pod("web", {}, podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [
        _term(namespaceSelector={"matchLabels": {"team": "y"}})
    ]})  # fmt: skip
    assert interpod_refusal(anywhere, NODES["n1"], [(other, {"n1": 1})], NODES, _labels) is None
    assert interpod_refusal(anywhere, NODES["n2"], [(other, {"n1": 1})], NODES, _labels) == AFFINITY_REFUSED


def test_the_first_pod_of_a_self_affine_set_is_allowed():
    db = _pod("db", {"app": "db"}, podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term()]})
    placed: dict[str, int] = {}
    assert interpod_refusal(db, NODES["n1"], [(db, placed)], NODES, _labels) is None
    placed["n1"] = 1  # the next pods follow the first
    assert interpod_refusal(db, NODES["n2"], [(db, placed)], NODES, _labels) == AFFINITY_REFUSED
    assert interpod_refusal(db, NODES["n1"], [(db, placed)], NODES, _labels) is None


def test_anti_affinity_holds_against_other_workloads_both_ways():
    db = _pod("db", {"app": "db"})
    loner = _pod(
        "loner", {"app": "x"}, podAntiAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term()]}
    )
    assert interpod_refusal(loner, NODES["n1"], [(db, {"n1": 1})], NODES, _labels) == ANTI_AFFINITY_REFUSED
    assert interpod_refusal(loner, NODES["n2"], [(db, {"n1": 1})], NODES, _labels) is None
    # the existing pod's term refuses the incoming db on its node (symmetry), not elsewhere
    assert (
        interpod_refusal(db, NODES["n1"], [(loner, {"n1": 1})], NODES, _labels)
        == EXISTING_ANTI_AFFINITY_REFUSED
    )
    assert interpod_refusal(db, NODES["n2"], [(loner, {"n1": 1})], NODES, _labels) is None
    # a node without the topology key is no domain the term holds in
    by_zone = _pod(
        "z", {"app": "z"}, podAntiAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term("zone")]}
    )
    assert interpod_refusal(by_zone, NODES["n3"], [(db, {"n3": 1})], NODES, _labels) is None
    assert interpod_refusal(by_zone, NODES["n2"], [(db, {"n1": 1})], NODES, _labels) == ANTI_AFFINITY_REFUSED


def test_a_pod_affinity_to_pods_nowhere_blocks(site, inputs):
    tree = edited(inputs, ONE, HUBBLE_RELAY, _relay_affinity({"k8s-app": "cilium-agent-renamed"}))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-cilium", "Deployment kube-system/hubble-relay", AFFINITY_REFUSED,
    )  # fmt: skip


# ---- 2. what operators make of their custom resources ------------------------------------------------


def test_envoy_gateway_names_its_proxies_as_it_hashes_them():
    assert hashed_name("envoy-gateway-system/site", 48) == "envoy-gateway-system-site-c7f57bbf"
    assert len(hashed_name("n" * 40 + "/" + "g" * 40, 48)) == 48 + 9


def test_a_prometheus_whose_node_selector_no_node_has(site, inputs):
    tree = edited(
        inputs, ONE, PROMETHEUS, _set(["spec", "nodeSelector"], {"node-role.kubernetes.io/tsdb": "true"})
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-kube-prometheus-stack", "StatefulSet monitoring/prometheus-kube-prometheus-stack-prometheus",
        "no node takes it", "node selector/affinity",
    )  # fmt: skip


# ---- 3. Kueue: a ClusterQueue's namespaceSelector ----------------------------------------------------


def test_a_cluster_queue_selector_unset_selects_nothing_and_empty_everything():
    labels = {"kubernetes.io/metadata.name": "ai-research"}
    assert not selects({"spec": {}}, labels)
    assert selects({"spec": {"namespaceSelector": {}}}, labels)
    assert not selects({"spec": {"namespaceSelector": {"matchLabels": {"team": "x"}}}}, labels)


def test_a_tenant_outside_the_cluster_queue_selector(site, inputs):
    narrow = {"matchLabels": {"kubernetes.io/metadata.name": "gpu-health"}}
    tree = edited(inputs, ONE, CLUSTER_QUEUE, _set(["spec", "namespaceSelector"], narrow))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-research/", "workload namespace doesn't match ClusterQueue selector",
    )  # fmt: skip


# ---- 4. Cilium's API server address --------------------------------------------------------------------


def test_the_api_server_is_served_at_the_endpoint_the_vip_and_the_advertise_addresses():
    docs = [
        {"kind": "InitConfiguration", "localAPIEndpoint": {"advertiseAddress": "10.0.0.11", "bindPort": 6443}},
        {"kind": "JoinConfiguration", "controlPlane": {"localAPIEndpoint": {"advertiseAddress": "10.0.0.12"}}},
        {"kind": "JoinConfiguration"},  # a worker's
        {"kind": "ClusterConfiguration", "controlPlaneEndpoint": "api.example:6443", "apiServer": {"certSANs": ["10.0.0.10"]}},
        {"kind": "Pod", "metadata": {"name": "kube-vip"}, "spec": {"containers": [{"env": [
            {"name": "address", "value": "10.0.0.10"}, {"name": "cp_enable", "value": "true"},
        ]}]}},
    ]  # fmt: skip
    addresses, names = api_server(docs)
    assert addresses == {("10.0.0.11", 6443), ("10.0.0.12", 6443), ("api.example", 6443), ("10.0.0.10", 6443)}
    assert names == {"10.0.0.11", "10.0.0.12", "api.example", "10.0.0.10"}


def test_agents_told_a_wrong_api_server_address(site, inputs):
    """The runbook applies Cilium and waits for the nodes: none turns Ready, the agents never connect."""
    tree = edited(inputs, ONE, CILIUM_AGENT, _agent_env("KUBERNETES_SERVICE_HOST", "10.20.0.99"))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "Primary CNI: Cilium", "nodes NotReady", "DaemonSet kube-system/cilium not running",
        "Unable to contact k8s api-server", "10.20.0.99:6443",
    )  # fmt: skip


# ---- 5. Multus networks ----------------------------------------------------------------------------------


def test_the_networks_annotation_as_multus_reads_it():
    assert requested_networks("rail-a, other/rail-b@net1", "t") == [("t", "rail-a"), ("other", "rail-b")]
    assert requested_networks('[{"name":"rail-a","interface":"net-a"},{"name":"x","namespace":"o"}]', "t") == [
        ("t", "rail-a"), ("o", "x"),
    ]  # fmt: skip
    with pytest.raises(NetworksError):
        requested_networks("a/b/c", "t")
    with pytest.raises(NetworksError):
        requested_networks("Rail_A", "t")


def test_a_rail_network_made_in_another_namespace(site, inputs):
    """The Network Operator makes the NetworkAttachmentDefinition in the IPoIBNetwork's networkNamespace:
    moved to `default`, the tenant's job finds none in its own namespace and its pods never start."""
    tree = edited(inputs, ONE, RAIL_A, _set(["spec", "networkNamespace"], "default"))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "Job ai-research/nccl-allreduce",
        "cannot find a network-attachment-definition (ai-research-rail-a) in namespace (ai-research)",
    )  # fmt: skip


# ---- harmless alternatives of each, in one bring-up --------------------------------------------------------


def _networks_as_list(doc):
    meta = doc["spec"]["template"]["metadata"]
    meta["annotations"][NETWORKS] = "ai-research/ai-research-rail-a@net-a, ai-research-rail-b@net-b, " + (
        "ai-research-rail-c@net-c, ai-research-rail-d@net-d"
    )


def test_harmless_alternatives_still_come_up(site, inputs):
    """A pod affinity to another workload on every node, a Prometheus placed by another label its nodes
    carry, a ClusterQueue selecting the tenant namespaces by name, the agents pointed at a control-plane
    host's advertise address, and the networks annotation as a comma list with namespaces."""
    changed = _edits(
        inputs,
        (HUBBLE_RELAY, _relay_affinity({"k8s-app": "cilium-envoy"})),
        (PROMETHEUS, _set(["spec", "nodeSelector"], {"kubernetes.io/os": "linux", "node-role.kubernetes.io/infra": "true"})),
        (CLUSTER_QUEUE, _set(["spec", "namespaceSelector"], {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ai-research", "gpu-health"]},
        ]})),
        (CILIUM_AGENT, _agent_env("KUBERNETES_SERVICE_HOST", "10.20.0.11")),
        (NCCL_JOB, _networks_as_list),
    )  # fmt: skip
    result = run(site, changed, ONE)
    assert result.ok, result.blocker
