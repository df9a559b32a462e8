"""`validate` on what the clusters receive: the hydrated chart objects and the values given to charts.

Each test puts back a defect hydration revealed and expects the finding that names object and rule.
"""

from __future__ import annotations

import yaml

from .conftest import edit_documents as _edit
from .conftest import findings as _findings

AISTOR_CILIUM = "two-cluster/apps/aistor/cilium"


def test_a_certificate_job_without_its_toleration_is_refused(tree):
    """Hubble's certificate Job on the AIStor cluster, every node of which is tainted."""
    (job,) = (tree / AISTOR_CILIUM).glob("kube-system.job.hubble-generate-certs-*.yaml")
    rel = job.relative_to(tree).as_posix()
    _edit(tree, rel, lambda doc: doc["spec"]["template"]["spec"].pop("tolerations"))
    lines = [ln for ln in _findings(tree) if ln.startswith(rel)]
    assert lines, "no finding for the Job"
    assert all("Job kube-system/hubble-generate-certs" in ln and ": PLC-" in ln for ln in lines), lines


def test_a_project_missing_a_kind_its_app_renders_is_refused(tree):
    """Kueue's APIService, which the hand-kept kind list of the gpu project used to miss."""
    rel = "one-cluster/bootstrap/argocd.appproject.gpu.yaml"
    _edit(
        tree,
        rel,
        lambda doc: doc["spec"].update(
            clusterResourceWhitelist=[
                k for k in doc["spec"]["clusterResourceWhitelist"] if k["kind"] != "APIService"
            ]
        ),
    )
    lines = [ln for ln in _findings(tree) if "APP-004" in ln]
    assert lines and all("APIService" in ln and "gpu" in ln for ln in lines), lines


def test_keys_the_chart_ignores_are_refused(tree):
    """Cilium 1.20 has no `externalIPs` block; csi-isilon takes allowedNetworks as one string."""
    cilium = "one-cluster/values/ai/cilium.yaml"
    isilon = "one-cluster/values/ai/csi-isilon.yaml"
    _edit(tree, cilium, lambda doc: doc.update(externalIPs={"enabled": True}))
    _edit(tree, isilon, lambda doc: doc.update(allowedNetworks=["10.30.0.0/16"]))
    lines = _findings(tree)
    assert any(ln.startswith(cilium) and "VAL-001" in ln and "$.externalIPs" in ln for ln in lines), lines
    assert any(
        ln.startswith(isilon) and "VAL-001" in ln and "$.allowedNetworks" in ln and "string" in ln
        for ln in lines
    ), lines


def test_a_cni_operator_that_waits_for_ready_nodes_is_refused(tree):
    """Without node.kubernetes.io/not-ready tolerated, Cilium's operator stays Pending on a fresh
    cluster, the agents never get pod CIDRs, and no node ever turns Ready."""
    rel = "one-cluster/apps/ai/cilium/kube-system.deployment.cilium-operator.yaml"

    def drop_not_ready(doc):
        spec = doc["spec"]["template"]["spec"]
        spec["tolerations"] = [
            t for t in spec["tolerations"] if t.get("key") != "node.kubernetes.io/not-ready"
        ]

    _edit(tree, rel, drop_not_ready)
    lines = [ln for ln in _findings(tree) if ln.startswith(rel)]
    assert lines and all("PLC-007 bootstrap-critical" in ln for ln in lines), lines


def test_two_clusters_handing_out_one_rail_range_are_refused(tree):
    """Two-cluster: both clusters' nodes sit on rails A and B of one fabric; each must own a part."""
    rel = "two-cluster/apps/aistor/fabric/nvidia-network-operator.ippool.rail-a.yaml"
    _edit(tree, rel, lambda doc: doc["spec"].update(subnet="10.100.0.0/20"))  # the whole rail, as before
    lines = [ln for ln in _findings(tree) if "FAB-001" in ln]
    assert lines and all(
        "overlaps 10.100.0.0/21 of cluster ai" in ln or "overlaps 10.100.0.0/20" in ln for ln in lines
    )


def test_an_acceptance_job_the_queue_can_never_admit_is_refused(tree):
    """The NCCL job needs every GPU of the queue while a model server holds 8: without a priority
    that may preempt serving it stays suspended for ever."""
    rel = "one-cluster/apps/ai/tenant-ai-research/ai-research.job.nccl-allreduce.yaml"
    _edit(tree, rel, lambda doc: doc["metadata"]["labels"].pop("kueue.x-k8s.io/priority-class"))
    lines = [ln for ln in _findings(tree) if ln.startswith(rel)]
    assert lines and "KUE-001" in lines[0] and "StatefulSet ai-research/llama-3-3-70b (8)" in lines[0], lines


def test_gpu_pods_are_held_to_their_namespace_level(tree):
    """No RuntimeClass is exempt from Pod Security any more: a GPU pod that adds IPC_LOCK breaks the
    tenant namespace's baseline level and is named (it used to skip enforce, audit and warn)."""
    admission = (tree / "one-cluster/kubeadm/ai/admission-config.yaml").read_text()
    assert "runtimeClasses: []" in admission
    kubeadm = (tree / "one-cluster/kubeadm/ai/init-cp01.yaml").read_text()
    assert "NodeRestriction,DenyServiceExternalIPs" in kubeadm  # no Service claims an external IP
    rel = "one-cluster/apps/ai/tenant-ai-research/ai-research.job.nccl-allreduce.yaml"

    def add_ipc_lock(doc):
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container["securityContext"]["capabilities"]["add"] = ["IPC_LOCK"]

    _edit(tree, rel, add_ipc_lock)
    lines = [ln for ln in _findings(tree) if ln.startswith(rel)]
    assert any("PSA-003" in ln and "baseline" in ln for ln in lines), lines


def test_a_model_server_kueue_would_evict_before_it_starts_is_refused(tree):
    """Kueue has one waitForPodsReady timeout for every workload: a training job's 10 minutes of image
    pulls would evict a model server still loading its weights (30 minutes), again and again."""
    rel = "one-cluster/apps/ai/kueue/kueue-system.configmap.kueue-manager-config.yaml"

    def shorten(doc):
        config = yaml.safe_load(doc["data"]["controller_manager_config.yaml"])
        config["waitForPodsReady"]["timeout"] = "10m"
        doc["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)

    _edit(tree, rel, shorten)
    lines = [ln for ln in _findings(tree) if "KUE-002" in ln]
    assert len(lines) == 1 and "StatefulSet ai-research/llama-3-3-70b" in lines[0], lines
    assert "may take 30 min to start" in lines[0] and "timeout of 10m" in lines[0]
