"""GPU pool and AI fabric: operands, rails, NCCL, Kueue, and the two rail profiles."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sitegen.check.allowlists import allow_lists
from sitegen.check.placement import targeted_pools, tolerated_taints, workloads
from sitegen.check.validate import validate_tree
from sitegen.compose.variant import synthesize
from sitegen.compose.writer import write_dist
from sitegen.model import load_site, resolve

from .conftest import CONFIG, DIST

HGX = CONFIG / "examples" / "hgx-b300-8rail"
GPU_TAINT = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _one(path: Path) -> dict[str, Any]:
    (doc,) = _load(path)
    return doc


def _tolerations(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "tolerations" and isinstance(value, list):
                found += [(f"{path}.tolerations", t) for t in value]
            else:
                found += _tolerations(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _tolerations(value, f"{path}[{i}]")
    return found


@pytest.fixture(scope="module")
def hgx_tree(tmp_path_factory) -> tuple[Path, Any]:
    site = load_site(HGX)
    out = tmp_path_factory.mktemp("hgx") / "dist"
    write_dist(synthesize(site, list(site.variants)), out, None)
    return out, site


def test_exactly_one_node_feature_discovery():
    for cluster in ("one-cluster/values/ai", "two-cluster/values/ai", "two-cluster/values/aistor"):
        assert (DIST / cluster / "node-feature-discovery.yaml").is_file()
    assert _one(DIST / "one-cluster/values/ai/gpu-operator.yaml")["nfd"] == {"enabled": False}
    assert _one(DIST / "one-cluster/values/ai/network-operator.yaml")["nfd"]["enabled"] is False
    worker = _one(DIST / "one-cluster/values/ai/node-feature-discovery-worker.yaml")["worker"]
    # one release each: the master's renders no worker, the worker's no master, collector or CRDs
    assert _one(DIST / "one-cluster/values/ai/node-feature-discovery.yaml")["worker"] == {"enable": False}
    assert {p.name for p in (DIST / "one-cluster/apps/ai/node-feature-discovery-worker").iterdir()} == {
        "app.json",
        *(f"node-feature-discovery-worker.{kind}.node-feature-discovery-worker{suffix}.yaml"
          for kind, suffix in (("configmap", "-conf"), ("daemonset", ""), ("role", ""), ("rolebinding", ""),
                               ("serviceaccount", ""))),
    }  # fmt: skip
    keys = {(t["key"], t.get("value")) for t in worker["tolerations"]}
    assert keys == {
        ("dedicated", "gpu"),
        ("dedicated", "aistor"),
        ("dedicated", "infra"),
        ("node-role.kubernetes.io/control-plane", None),
    }


def test_gpu_operator_values(site):
    values = _one(DIST / "one-cluster/values/ai/gpu-operator.yaml")
    driver = site.versions.images["nvidia-driver"].tag
    assert values["driver"]["version"] == driver and values["driver"]["kernelModuleType"] == "open"
    assert values["driver"]["rdma"]["enabled"] is False  # DMA-BUF, not nvidia-peermem
    assert values["daemonsets"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        GPU_TAINT,
    ]
    assert values["migManager"]["config"]["default"] == "all-disabled"
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert values["operator"]["nodeSelector"] == {"node-role.kubernetes.io/infra": "true"}


def test_only_gpu_workloads_tolerate_the_gpu_taint(docs, site):
    """Every pod template and operand block in one-cluster tolerating dedicated=gpu, hydrated charts
    included, is a listed agent that must reach GPU nodes or selects GPU nodes itself."""
    pools = resolve(site, "one-cluster").clusters[0].pools
    gpu = next(p for p in pools if p.name == "gpu")
    agents = allow_lists(site).agents_of("one-cluster", "ai")
    checked = 0
    for w in workloads([d for d in docs if d.variant == "one-cluster"], agents):
        if not set(gpu.taints) & tolerated_taints(w.placement, pools):
            continue
        checked += 1
        if w.agent is not None:
            assert {"*", "gpu"} & set(w.agent.pools), w.agent_key
        else:
            assert gpu in targeted_pools(w.placement, pools), f"{w.doc.file} {w.path} tolerates the GPU taint"
    assert checked > 5


def _device_plugin_resources(tree: Path, variant: str, pool: str) -> set[str]:
    policy = _one(tree / variant / f"apps/ai/fabric/nicnodepolicy.{pool}-rails.yaml")
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    return {"rdma/" + c["resourceName"] for c in config["configList"]}


def _job(tree: Path, variant: str = "one-cluster") -> dict[str, Any]:
    return _one(tree / variant / "apps/ai/tenant-ai-research/ai-research.job.nccl-allreduce.yaml")


def _container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["template"]["spec"]["containers"][0]


def test_requested_rdma_resources_exist_in_the_device_plugin():
    requested = {r for r in _container(_job(DIST))["resources"]["requests"] if r.startswith("rdma/")}
    assert requested == _device_plugin_resources(DIST, "one-cluster", "gpu")
    assert _device_plugin_resources(DIST, "one-cluster", "storage") == {
        "rdma/rdma_rail_a",
        "rdma/rdma_rail_b",
    }


def test_nccl_hca_list_matches_the_rails_of_the_pool(site):
    env = {e["name"]: e.get("value") for e in _container(_job(DIST))["env"]}
    assert env["NCCL_IB_HCA"] == "=" + ",".join(nic.name for nic in site.fabric.nics["gpu"])
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0"


def test_example_job_shape():
    job = _job(DIST)
    spec = job["spec"]
    pod = spec["template"]["spec"]
    assert spec["suspend"] is True and job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ai-research"
    assert spec["completions"] == spec["parallelism"] == 12 and spec["completionMode"] == "Indexed"
    assert pod["runtimeClassName"] == "nvidia" and pod["tolerations"] == [GPU_TAINT]
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/gpu": "true"}
    container = _container(job)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}  # memlock is the host's limit
    assert pod["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    networks = json.loads(spec["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert [n["name"] for n in networks] == [f"ai-research-rail-{r}" for r in "abcd"]
    for net in networks:
        assert (DIST / f"one-cluster/apps/ai/fabric/ipoibnetwork.{net['name']}.yaml").is_file()


def test_kueue_quota_is_computed(site):
    queue = _one(DIST / "one-cluster/apps/ai/gpu-queues/clusterqueue.gpu.yaml")
    (group,) = queue["spec"]["resourceGroups"]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quota["nvidia.com/gpu"] == 96 and quota["cpu"] == 1536
    assert set(group["coveredResources"]) >= {f"rdma/rdma_rail_{r}" for r in "abcd"}
    flavor = _one(DIST / "one-cluster/apps/ai/gpu-queues/resourceflavor.b300.yaml")
    assert flavor["spec"]["nodeLabels"] == {"node-role.kubernetes.io/gpu": "true"}
    assert flavor["spec"]["tolerations"] == [GPU_TAINT]


def test_ip_pools_per_rail(site):
    pool = _one(DIST / "one-cluster/apps/ai/fabric/nvidia-network-operator.ippool.rail-a.yaml")
    assert pool["spec"]["subnet"] == str(site.fabric.rails["A"].cidr)
    assert pool["spec"]["perNodeBlockSize"] == 64  # 4096 addresses over 42 nodes on rail A
    terms = pool["spec"]["nodeSelector"]["nodeSelectorTerms"]
    assert len(terms) == 2  # GPU and storage nodes sit on rail A


def test_driver_policy_keeps_the_management_nics_safe(config_copy):
    policy = _one(DIST / "one-cluster/apps/ai/fabric/nicnodepolicy.gpu-rails.yaml")
    assert "ofedDriver" not in policy["spec"]  # default `inbox`: no DOCA container restarting mlx5 links
    (config_copy / "fabric.yaml").write_text(
        (config_copy / "fabric.yaml").read_text().replace("driver: inbox", "driver: doca-container")
    )
    site = load_site(config_copy)
    files = synthesize(site, ["one-cluster"])
    (nnp,) = [f for f in files if f.path.name == "nicnodepolicy.gpu-rails.yaml"]
    assert (
        nnp.documents[0]["spec"]["ofedDriver"]["version"]
        == site.versions.images["network-operator-doca-driver"].tag
    )


def test_cilium_values_per_cluster(site):
    ai = _one(DIST / "two-cluster/values/ai/cilium.yaml")
    aistor = _one(DIST / "two-cluster/values/aistor/cilium.yaml")
    assert (
        ai["devices"] == ["bond0"]
        and ai["cni"] == {"exclusive": False}
        and ai["kubeProxyReplacement"] is True
    )
    assert ai["k8sServiceHost"] == str(site.clusters["ai"].api.vip)
    assert (ai["cluster"]["name"], ai["cluster"]["id"]) != (
        aistor["cluster"]["name"],
        aistor["cluster"]["id"],
    )
    assert ai["ipv4NativeRoutingCIDR"] != aistor["ipv4NativeRoutingCIDR"]
    pool = _one(DIST / "two-cluster/apps/aistor/cilium-lb/ciliumloadbalancerippool.aistor-services.yaml")
    (block,) = pool["spec"]["blocks"]  # below the storage servers' S3 front doors
    assert ipaddress.ip_address(block["start"]) in site.clusters["aistor"].load_balancer_cidr


def test_hgx_profile_synthesizes_and_validates(hgx_tree):
    tree, site = hgx_tree
    report = validate_tree(tree, site)
    assert report.findings == [], [str(f) for f in report.findings[:5]]


def test_switching_the_rail_profile_changes_everything_consistently(hgx_tree):
    tree, _ = hgx_tree
    rails = [r for r in "abcdefgh"]
    container = _container(_job(tree))
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}" for i in range(8))
    requested = {r for r in container["resources"]["requests"] if r.startswith("rdma/")}
    assert (
        requested
        == {f"rdma/rdma_rail_{r}" for r in rails}
        == _device_plugin_resources(tree, "one-cluster", "gpu")
    )
    networks = json.loads(
        _job(tree)["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
    )
    assert [n["name"] for n in networks] == [f"ai-research-rail-{r}" for r in rails]
    assert len(list((tree / "one-cluster/apps/ai/fabric").glob("*.ippool.rail-*.yaml"))) == 8
    queue = _one(tree / "one-cluster/apps/ai/gpu-queues/clusterqueue.gpu.yaml")
    assert {f"rdma/rdma_rail_{r}" for r in rails} <= set(
        queue["spec"]["resourceGroups"][0]["coveredResources"]
    )


def test_no_runtime_class_is_exempt_from_pod_security():
    """An exempt request skips enforce, audit and warn: GPU pods are held to their namespace's level
    like every other (they add no capability; RDMA's memlock is lifted on the host)."""

    def exemptions(path: str) -> dict[str, Any]:
        config = _one(DIST / path)["plugins"][0]["configuration"]
        return config["exemptions"]

    assert exemptions("one-cluster/kubeadm/ai/admission-config.yaml")["runtimeClasses"] == []
    assert exemptions("two-cluster/kubeadm/aistor/admission-config.yaml")["runtimeClasses"] == []
    assert _job(DIST)["spec"]["template"]["spec"]["runtimeClassName"] == "nvidia"


@pytest.mark.parametrize("variant", ["one-cluster", "two-cluster"])
def test_nv_ipam_controller_stays_on_the_system_pool(site, variant):
    """The NicClusterPolicy's Deployments (nv-ipam's controller) go where the site's controllers run,
    never unplaced (where the operator's defaults could put them on control-plane nodes)."""
    for cluster in resolve(site, variant).clusters:
        path = DIST / variant / "apps" / cluster.name / "fabric" / "nicclusterpolicy.nic-cluster-policy.yaml"
        if not path.exists():
            continue
        spec = _one(path)["spec"]
        system = cluster.system_pool.placement
        terms = spec["deploymentNodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert terms == [
            {
                "matchExpressions": [
                    {"key": k, "operator": "In", "values": [v]} for k, v in system.node_selector.items()
                ]
            }
        ]
        assert spec["deploymentTolerations"] == list(system.tolerations)


def test_driver_upgrades_wait_for_batch_jobs_one_node_at_a_time():
    """A driver change never takes a node from under a running multi-node job: the operator waits for
    the pods its selector names, which the acceptance job's pods carry."""
    policy = _one(DIST / "one-cluster/apps/ai/gpu-operator/clusterpolicy.cluster-policy.yaml")
    upgrade = policy["spec"]["driver"]["upgradePolicy"]
    assert (upgrade["maxParallelUpgrades"], str(upgrade["maxUnavailable"])) == (1, "1")  # IntOrString
    wait = upgrade["waitForCompletion"]
    assert wait["timeoutSeconds"] == 0
    key, _, value = wait["podSelector"].partition("=")
    job = _one(DIST / "one-cluster/apps/ai/tenant-ai-research/ai-research.job.nccl-allreduce.yaml")
    assert job["spec"]["template"]["metadata"]["labels"][key] == value
