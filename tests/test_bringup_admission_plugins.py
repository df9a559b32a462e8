"""The API server's admission plugins the bring-up models in refusals/admission_plugins.py (ResourceQuota's
object counts, RuntimeClass, PodTolerationRestriction) and the Application's own destination against
its AppProject (project_policy.py): each defect put back into a copy of dist/, and what stays allowed."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from sitegen.check.bringup.kube import best_effort, pod_template
from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.admission_plugins import (
    admitted_tolerations,
    object_count_refusal,
    runtime_class_refusal,
    toleration_refusal,
)
from sitegen.check.bringup.vault import Vault
from sitegen.check.project_policy import application_destination_refusal
from sitegen.check.tolerations import is_superset, merge

from .bringup_cases import ONE, blocked, edited, run

TENANT = "one-cluster/apps/ai/tenant-ai-research/"
TENANT_NAMESPACE = "one-cluster/apps/ai/namespaces/namespace.ai-research.yaml"
FLAVORS = "one-cluster/apps/ai/gpu-queues/"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
GPU = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
MEMORY_PRESSURE = {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}


def _cluster(*bodies: dict[str, Any], plugins: frozenset[str] = frozenset()) -> ClusterObjects:
    cluster = ClusterObjects("test", Vault())
    cluster.admission_plugins = plugins
    for body in bodies:
        cluster.apply(body, "test")
    return cluster


def _namespace(name: str, **annotations: Any) -> dict[str, Any]:
    meta = {"name": name, "annotations": {k: json.dumps(v) for k, v in annotations.items()}}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _quota(**hard: str) -> dict[str, Any]:
    meta = {"name": "quota", "namespace": "team"}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": {"hard": hard}}


def _service(name: str, kind: str = "ClusterIP", ports: int = 1, **spec: Any) -> dict[str, Any]:
    ports_ = [{"name": f"p{i}", "port": 80 + i} for i in range(ports)]
    meta = {"name": name, "namespace": "team"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"type": kind, "ports": ports_, **spec},
    }


def _job(namespace: str = "team", **pod: Any) -> Workload:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [container], **pod}}},
    }
    template = pod_template(body)
    assert template is not None
    return Workload(template, "test")


# ---- ResourceQuota: object counts and Service types ----------------------------------------------
def test_a_load_balancer_beyond_the_tenants_quota_is_refused(site, inputs):
    """The tenant quota allows no LoadBalancer (nor its node ports): the API server refuses the Service."""

    def change(doc):
        if doc.get("kind") == "Service":
            doc["spec"].pop("clusterIP", None)
            doc["spec"]["type"] = "LoadBalancer"

    tree = edited(inputs, ONE, TENANT, change)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-tenant-ai-research",
        "Service ai-research/nccl-allreduce",
        'services "nccl-allreduce" is forbidden: exceeded quota: quota, '
        "requested: services.loadbalancers=1,services.nodeports=1, used: services.loadbalancers=0,"
        "services.nodeports=0, limited: services.loadbalancers=0,services.nodeports=0",
    )


def test_service_types_count_as_the_quota_evaluator_counts_them():
    quota = _quota(**{"services.loadbalancers": "1", "services.nodeports": "2", "services": "3"})
    cluster = _cluster(_namespace("team"), quota)
    assert object_count_refusal(_service("plain", ports=5), cluster) is None  # ClusterIP: no node port
    refused = object_count_refusal(_service("np", "NodePort", ports=3), cluster)
    assert refused is not None and "requested: services.nodeports=3, used: services.nodeports=0" in refused
    # a LoadBalancer without allocated node ports counts only the ports that name one
    quiet = _service("lb", "LoadBalancer", ports=4, allocateLoadBalancerNodePorts=False)
    assert object_count_refusal(quiet, cluster) is None
    cluster.apply(quiet, "test")
    refused = object_count_refusal(
        _service("lb2", "LoadBalancer", allocateLoadBalancerNodePorts=False), cluster
    )
    assert (
        refused is not None and "services.loadbalancers=1, used: services.loadbalancers=1, limited" in refused
    )
    assert object_count_refusal(quiet, cluster) is None  # applied again: charged nothing more
    for name in ("a", "b"):
        cluster.apply(_service(name), "test")
    refused = object_count_refusal(_service("c"), cluster)
    assert refused is not None and "exceeded quota: quota, requested: services=1, used: services=3" in refused


def test_object_counts_include_what_every_namespace_holds():
    """kube-root-ca.crt is in every namespace: `configmaps: 2` leaves room for one more."""
    cluster = _cluster(_namespace("team"), _quota(**{"count/configmaps": "2", "count/deployments.apps": "1"}))

    def config_map(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "team"}}

    assert object_count_refusal(config_map("one"), cluster) is None
    cluster.apply(config_map("one"), "test")
    refused = object_count_refusal(config_map("two"), cluster)
    assert refused == (
        'configmaps "two" is forbidden: exceeded quota: quota, requested: count/configmaps=1, '
        "used: count/configmaps=2, limited: count/configmaps=2"
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "team"},
    }
    assert object_count_refusal(deployment, cluster) is None
    cluster.apply(deployment, "test")
    other = {**deployment, "metadata": {"name": "e", "namespace": "team"}}
    assert 'deployments.apps "e" is forbidden' in str(object_count_refusal(other, cluster))
    elsewhere = {**other, "metadata": {"name": "e", "namespace": "other"}}
    assert object_count_refusal(elsewhere, cluster) is None  # another namespace's quota


# ---- RuntimeClass ---------------------------------------------------------------------------------
def _runtime_class(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "rc"},
        "handler": "rc",
        **fields,
    }


def test_a_runtime_class_whose_node_selector_conflicts_refuses_the_pod():
    runtime = _runtime_class(scheduling={"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU]})
    cluster = _cluster(_namespace("team"), runtime)
    conflicting = _job(runtimeClassName="rc", nodeSelector={"pool": "cpu"})
    assert runtime_class_refusal(conflicting, cluster) == (
        "conflict: runtimeClass.scheduling.nodeSelector[pool] = gpu; pod.spec.nodeSelector[pool] = cpu"
    )
    # the same value, or another key, merges
    assert runtime_class_refusal(_job(runtimeClassName="rc", nodeSelector={"pool": "gpu"}), cluster) is None
    assert runtime_class_refusal(_job(runtimeClassName="rc", nodeSelector={"zone": "a"}), cluster) is None
    # its tolerations are the pod's from then on (PodTolerationRestriction judges them)
    assert GPU in admitted_tolerations(_job(runtimeClassName="rc"), cluster)


def test_a_pods_own_overhead_must_be_its_runtime_classs():
    cluster = _cluster(
        _namespace("team"), _runtime_class(overhead={"podFixed": {"cpu": "250m", "memory": "1Gi"}})
    )
    same = _job(runtimeClassName="rc", overhead={"cpu": "0.25", "memory": "1024Mi"})
    assert runtime_class_refusal(same, cluster) is None
    other = _job(runtimeClassName="rc", overhead={"cpu": "1", "memory": "1Gi"})
    assert runtime_class_refusal(other, cluster) == (
        "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
    )


def test_overhead_with_a_runtime_class_that_defines_none_is_put_back(site, inputs):
    """The GPU Operator's RuntimeClass `nvidia` defines no overhead: a pod may not set one."""

    def change(doc):
        if doc.get("kind") == "Job":
            doc["spec"]["template"]["spec"]["overhead"] = {"cpu": "1"}

    tree = edited(inputs, ONE, TENANT, change)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-tenant-ai-research",
        "Job ai-research/nccl-allreduce",
        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
    )


# ---- PodTolerationRestriction ----------------------------------------------------------------------
def test_the_whitelist_covers_by_superset():
    """isSuperset: Exists covers every value, an empty effect every effect, seconds bound NoExecute."""
    assert is_superset({"key": "dedicated", "operator": "Exists"}, GPU)
    assert is_superset({"operator": "Exists"}, GPU)
    assert not is_superset({**GPU, "value": "cpu"}, GPU)
    assert not is_superset({**GPU, "effect": "NoExecute"}, GPU)
    bounded = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    assert not is_superset(bounded, {"key": "k", "operator": "Exists", "effect": "NoExecute"})
    assert is_superset(bounded, {**bounded, "tolerationSeconds": 30})
    assert merge([GPU], [{"key": "dedicated", "operator": "Exists"}]) == [
        {"key": "dedicated", "operator": "Exists"}
    ]


def test_pods_that_are_not_best_effort_tolerate_memory_pressure():
    cluster = _cluster(
        _namespace("team", **{WHITELIST: [GPU]}), plugins=frozenset({"PodTolerationRestriction"})
    )
    burstable = _job(tolerations=[GPU])
    assert MEMORY_PRESSURE in admitted_tolerations(burstable, cluster)
    assert "conflict with its namespace whitelist" in str(toleration_refusal(burstable, cluster))
    # BestEffort: no CPU or memory asked (a GPU alone does not count), so no memory-pressure toleration
    gpu_only = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    assert best_effort({"containers": [gpu_only]})
    assert not best_effort({"containers": [{"name": "c", "resources": {"limits": {"memory": "1Gi"}}}]})
    # DefaultTolerationSeconds' tolerations are in the namespace's whitelist as the site writes it
    from constructs.namespaces import DEFAULT_TOLERATIONS

    admitting = _namespace("team", **{WHITELIST: [GPU, *DEFAULT_TOLERATIONS, MEMORY_PRESSURE]})
    cluster = _cluster(admitting, plugins=frozenset({"PodTolerationRestriction"}))
    assert toleration_refusal(burstable, cluster) is None


def test_namespace_defaults_merge_and_the_cluster_whitelist_stands_in():
    plugins = frozenset({"PodTolerationRestriction"})
    cluster = _cluster(
        _namespace("team", **{"scheduler.alpha.kubernetes.io/defaultTolerations": [GPU]}), plugins=plugins
    )
    assert GPU in admitted_tolerations(_job(), cluster)
    cluster.plugin_configs = {
        "PodTolerationRestriction": {"whitelist": [{"key": "dedicated", "operator": "Exists"}]}
    }
    refused = toleration_refusal(_job(), cluster)
    assert refused is not None and "conflict with its cluster whitelist" in refused
    cluster.plugin_configs = {"PodTolerationRestriction": {"whitelist": [{"operator": "Exists"}]}}
    assert toleration_refusal(_job(), cluster) is None
    # off unless the API server enables it
    assert toleration_refusal(_job(), _cluster(_namespace("team", **{WHITELIST: [GPU]}))) is None


def test_a_whitelist_without_the_memory_pressure_toleration_is_put_back(site, inputs):
    """The tenant's whitelist as it was before: its GPU jobs ask for CPU and memory, so the plugin adds
    the memory-pressure toleration, which the whitelist must admit."""

    def change(doc):
        annotations = doc["metadata"]["annotations"]
        allowed = [t for t in json.loads(annotations[WHITELIST]) if t["key"] != MEMORY_PRESSURE["key"]]
        annotations[WHITELIST] = json.dumps(allowed)

    tree = edited(inputs, ONE, TENANT_NAMESPACE, change)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-tenant-ai-research",
        "nccl-allreduce",
        "pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist",
        "node.kubernetes.io/memory-pressure",
    )


def test_a_flavor_toleration_the_tenant_may_not_have_is_put_back(site, inputs):
    """Kueue injects its flavor's tolerations into an admitted job's pods: the whitelist judges them."""

    def change(doc):
        if doc.get("kind") == "ResourceFlavor":
            doc["spec"]["tolerations"].append(
                {"key": "dedicated", "operator": "Equal", "value": "aistor", "effect": "NoSchedule"}
            )

    tree = edited(inputs, ONE, FLAVORS, change)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "GPU burn-in",  # the first queued jobs on the flavor: the runbook's burn-in in gpu-health
        "Job gpu-health/burn-in-gpu01",
        "evicted by Kueue",
        "conflict with its namespace whitelist",
        '"value": "aistor"',
    )


def test_a_covering_whitelist_entry_and_more_cluster_ip_ports_still_come_up(site, inputs):
    """Harmless alternatives: the tenant's whitelist admits any `dedicated` NoSchedule toleration (a
    superset of the GPU one), and its Service is an explicit ClusterIP with a second port (no node port,
    no load balancer)."""

    def whitelist(doc):
        annotations = doc["metadata"]["annotations"]
        allowed = [t for t in json.loads(annotations[WHITELIST]) if t["key"] != "dedicated"]
        annotations[WHITELIST] = json.dumps(
            [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, *allowed]
        )

    def service(doc):
        if doc.get("kind") == "Service":
            doc["spec"]["type"] = "ClusterIP"
            doc["spec"]["ports"].append({"name": "metrics", "port": 9090, "targetPort": 9090})

    tree = edited(inputs, ONE, TENANT_NAMESPACE, whitelist)
    tree = edited({ONE: (tree, inputs[ONE][1])}, ONE, TENANT, service)
    result = run(site, inputs, ONE, tree=tree)
    assert result.ok, result.blocker


# ---- Argo CD: the Application's own destination -----------------------------------------------------
def test_an_application_destination_outside_its_project_is_put_back(site, inputs):
    """Every resource of the tenant app is in ai-research, which the project permits; its destination
    namespace is not: Argo CD marks the spec invalid and syncs nothing."""
    texts = dict(inputs[ONE][1])
    path = PurePosixPath(TENANT, "app.json")
    element = json.loads(texts[path])
    element["namespace"] = "default"
    texts[path] = json.dumps(element)
    blocked(
        run(site, inputs, ONE, texts=texts),
        "ai-tenant-ai-research",
        "application destination server 'https://kubernetes.default.svc' and namespace 'default' do not "
        "match any of the allowed destinations in project 'tenants'",
    )


def test_destination_patterns_match_as_argo_cd_matches_them():
    def project(*destinations: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": "p"}, "spec": {"destinations": list(destinations)}}

    server = "https://kubernetes.default.svc"
    anywhere = project({"server": "*", "namespace": "team-*"})
    assert application_destination_refusal(anywhere, server, "team-a") is None
    assert application_destination_refusal(anywhere, server, "kube-system") is not None
    denying = project({"server": server, "namespace": "*"}, {"server": server, "namespace": "!kube-system"})
    assert application_destination_refusal(denying, server, "team-a") is None
    assert application_destination_refusal(denying, server, "kube-system") is not None
