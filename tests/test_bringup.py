"""The offline first install (`sitegen bringup`): both variants and the 8-rail example come up, and
every day-1 defect of issue 13, put back, is named with its component, step and reason."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from sitegen.check.bringup import bringup, from_files, timeline
from sitegen.check.bringup.argo import _waves, synced_by_argo
from sitegen.compose.variant import synthesize
from sitegen.model import load_site
from sitegen.model.layout import resolve

from .bringup_cases import ONE, TWO, blocked, edited, rewaved, run, runbook_without
from .conftest import CONFIG, DIST, invoke_sitegen


@pytest.mark.parametrize("variant", [ONE, TWO])
def test_the_variant_comes_up(site, inputs, variant):
    result = run(site, inputs, variant)
    assert result.ok, timeline(result)
    text = timeline(result)
    apps = [p for p in inputs[variant][0] if p.parent.name == "bootstrap" and ".application." in p.name]
    elements = [json.loads(t) for p, t in inputs[variant][1].items() if p.name == "app.json"]
    first_install = result.timeline[: next(i for i, e in enumerate(result.timeline) if e.step == "done")]
    healthy = [n for e in first_install if e.what.startswith("Healthy: ") for n in e.what[9:].split(", ")]
    assert sorted(healthy) == sorted(
        [p.name.split(".")[2] for p in apps if p.name != "argocd.application.root.yaml"]
        + [f"{e['cluster']}-{e['app']}" for e in elements]
    )
    layout = resolve(site, variant)
    assert sum(1 for e in result.timeline if e.step == "done") == len(layout.clusters)
    # the acceptance job takes every GPU: it preempts the model server, which comes back after it
    assert "llama-3-3-70b preempted by Job ai-research/nccl-allreduce" in text
    assert text.index("nccl-allreduce ran to completion", text.index("acceptance re-run")) < text.rindex(
        "Kueue admitted StatefulSet ai-research/llama-3-3-70b"
    )
    # every host of each cluster joined, with its pool's labels and registration taints, before the CNI
    ready = {e.cluster: e.what for e in result.timeline if e.what.endswith(" nodes Ready")}
    assert ready == {c.name: f"{sum(len(p.hosts) for p in c.pools)} nodes Ready" for c in layout.clusters}
    # no deletion hook is shipped (a sync never runs one; deleting an Application would)
    assert "node-feature-discovery-prune" not in text and "gpu-operator-cleanup" not in text


def test_hooks_apply_in_their_phase_and_weight():
    """gitops-engine orders a sync's tasks by phase, then wave (a Helm hook's weight where no sync-wave
    is set), then kind: a PreSync hook precedes even an earlier wave, a PostSync hook waits for the
    whole Sync phase."""

    def obj(name: str, kind: str = "Job", **annotations: str) -> dict:
        return {"kind": kind, "metadata": {"name": name, "annotations": annotations}}

    objects = [
        obj("patch", **{"helm.sh/hook": "post-install,post-upgrade"}),
        obj("late", "Deployment", **{"argocd.argoproj.io/sync-wave": "5"}),
        obj("early", "ConfigMap", **{"argocd.argoproj.io/sync-wave": "-5"}),
        obj("create", **{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "1"}),
        obj("rbac", "Role", **{"helm.sh/hook": "pre-install,post-install", "helm.sh/hook-weight": "-1"}),
        obj("setup", **{"argocd.argoproj.io/hook": "Sync", "helm.sh/hook": "post-delete"}),
    ]
    groups = [[o["metadata"]["name"] for o in group] for group in _waves(objects)]
    assert groups == [["rbac"], ["create"], ["early"], ["setup"], ["late"], ["patch"]]


@pytest.mark.parametrize(
    ("hook", "synced"),
    [
        (None, True),
        ("pre-install,pre-upgrade", True),
        ("post-install", True),
        ("pre-install, pre-upgrade", True),  # as some charts space it
        ("post-delete", False),
        ("pre-delete", False),
        ("test", False),
    ],
)
def test_argo_cd_syncs_helm_install_and_upgrade_hooks_only(hook, synced):
    """gitops-engine maps Helm's install and upgrade hooks to sync phases; any other Helm hook is a
    hook without a phase, which no sync applies."""
    annotations = {} if hook is None else {"helm.sh/hook": hook}
    body = {"kind": "Job", "metadata": {"name": "j", "annotations": annotations}}
    assert synced_by_argo(body) is synced


def test_the_eight_rail_example_comes_up():
    site = load_site(CONFIG / "examples" / "hgx-b300-8rail")
    result = bringup(site, ONE, *from_files(synthesize(site, [ONE]), ONE))
    assert result.ok, timeline(result)
    text = timeline(result)
    assert "rdma/rdma_rail_h: 63 on 12 nodes" in text and "nvidia.com/gpu: 8 on 12 nodes" in text


def test_the_cli_prints_a_timeline_and_exits_zero():
    result = invoke_sitegen("bringup", "--dist", DIST, "--variant", ONE)
    assert result.exit_code == 0, result.output
    assert "[ai] wave 0: Healthy: ai-namespaces" in result.output
    assert result.output.rstrip().endswith("OK: every Application Healthy")


# ---- the defects of issue 13, put back ------------------------------------------------------------


def test_cilium_operator_without_the_not_ready_toleration(site, inputs):
    def empty(doc):
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "cilium-operator":
            doc["spec"]["template"]["spec"]["tolerations"] = []

    result = run(site, inputs, tree=edited(inputs, ONE, "one-cluster/apps/ai/cilium/", empty))
    blocked(result, "Primary CNI", "102 nodes NotReady", "cilium-operator not running", "not-ready")


def test_the_nfd_worker_without_the_gpu_pools_toleration(site, inputs):
    """NFD runs in two apps (the worker alone in its privileged namespace): the GPU nodes are labelled
    only where the worker runs, so the GPU Operator never places its device plugin there."""

    def untolerated(doc):
        if doc["kind"] == "DaemonSet" and doc["metadata"]["name"] == "node-feature-discovery-worker":
            spec = doc["spec"]["template"]["spec"]
            spec["tolerations"] = [t for t in spec["tolerations"] if t.get("value") != "gpu"]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/node-feature-discovery-worker/", untolerated)
    blocked(run(site, inputs, tree=tree), "GPU burn-in", "burn-in-gpu01", "nvidia.com/gpu does not fit")


def test_a_node_object_from_git(site, inputs):
    """A Node in git (its project admitting the kind, as synth would compute it) makes the joining
    kubelet skip its registration taints."""

    def admit_nodes(doc):
        doc["spec"]["clusterResourceWhitelist"].append({"group": "", "kind": "Node"})

    tree = edited(inputs, ONE, "one-cluster/bootstrap/argocd.appproject.platform-nodes", admit_nodes)
    tree[PurePosixPath(ONE, "apps/ai/node-labels/node.gpu01.yaml")] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu01", "labels": {"accelerator": "nvidia-b300"}},
        }
    ]
    blocked(run(site, inputs, tree=tree), "ai-node-labels", "Node gpu01", "register-with-taints")


def test_the_acceptance_job_without_preemption(site, inputs):
    def no_preemption(doc):
        doc["spec"].pop("preemption", None)

    tree = edited(inputs, ONE, "one-cluster/apps/ai/gpu-queues/clusterqueue", no_preemption)
    blocked(
        run(site, inputs, tree=tree),
        "acceptance re-run", "ai-tenant-ai-research", "Job ai-research/nccl-allreduce",
        "ClusterQueue gpu is full and preempts nothing", "nvidia.com/gpu: 8 in use + 96 asked > 96",
    )  # fmt: skip


def test_gpu_hosts_joined_without_fabric_preparation(site, inputs):
    texts = runbook_without(inputs, ONE, r"^bash dist/one-cluster/kubeadm/ai/fabric-prep-gpu\.sh\n")
    blocked(
        run(site, inputs, texts=texts),
        "GPU burn-in", "nccl-pair-gpu01-gpu02", "rdma/rdma_rail_a does not fit",
    )  # fmt: skip


def test_no_vault_role_for_the_cluster(site, inputs):
    texts = runbook_without(inputs, ONE, r"^vault write auth/kubernetes-ai/role/.*\n")
    blocked(
        run(site, inputs, texts=texts),
        "ai-secret-store", "the vault has no role external-secrets-", "on auth mount kubernetes-ai",
    )  # fmt: skip


def test_powerscale_without_the_snapshot_controller(site, inputs):
    tree = {
        p: docs for p, docs in inputs[ONE][0].items()
        if "snapshot-controller" not in str(p)
    }  # fmt: skip
    blocked(run(site, inputs, tree=tree), "ai-powerscale", "serves no VolumeSnapshotClass")


def test_nodes_joined_without_kubelet_reservations(site, inputs):
    texts = runbook_without(inputs, ONE, r"^install -D -m 0644 \S+/kubelet-gpu\.yaml \S+\n")
    blocked(run(site, inputs, texts=texts), "Worker join: pool gpu", "without kubelet reservations")


def test_reservations_leave_too_little_for_the_acceptance_job(site, inputs):
    def reserve(doc):
        doc["kubeReserved"]["memory"] = "300000Mi"

    tree = edited(inputs, ONE, "one-cluster/kubeadm/ai/kubelet-gpu.yaml", reserve)
    # the burn-in is the first whole-node pod: it stops there
    blocked(run(site, inputs, tree=tree), "burn-in-gpu01", "memory does not fit: 1800.0 GB per pod")


def test_kueue_webhooks_on_every_namespace_block_the_platform(site, inputs):
    def every_namespace(doc):
        for hook in doc.get("webhooks") or []:
            if "namespaceSelector" in hook:
                hook["namespaceSelector"] = {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"]}
                ]}  # fmt: skip

    tree = edited(inputs, ONE, "one-cluster/apps/ai/kueue/mutatingwebhookconfiguration", every_namespace)
    blocked(run(site, inputs, tree=tree), "kueue-mutating-webhook-configuration", "cannot answer")


def test_s3_keys_never_written(site, inputs):
    texts = runbook_without(inputs, ONE, r"^vault kv put .*/aistor/users/.*\n")
    # the first app of the root's order that reads an S3 key stops there
    blocked(run(site, inputs, texts=texts), "Progressing", "the vault holds no aistor/users/")


def test_the_second_backup_target_never_set_up(site, inputs):
    texts = runbook_without(inputs, ONE, r"^vault kv put .*/backups/.*\n")
    blocked(run(site, inputs, texts=texts), "ai-etcd-backup", "the vault holds no backups/powerscale/")


def test_a_runbook_step_waiting_on_a_misnamed_application(site, inputs):
    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "bootstrap", "RUNBOOK.md")
    texts[path] = texts[path].replace("Once `ai-aistor-volumemanager`", "Once `ai-aistor-volume-manager`")
    blocked(
        run(site, inputs, texts=texts),
        "ai-aistor-volume-manager",
        "waits on an Application that does not exist",
    )


def test_directpv_drives_never_initialized(site, inputs):
    texts = runbook_without(inputs, ONE, r"^kubectl directpv init .*\n")
    blocked(run(site, inputs, texts=texts), "ai-aistor", "DirectPV has no drives")


def test_a_pool_joining_without_its_taints(site, inputs):
    def untainted(doc):
        doc["nodeRegistration"].pop("taints", None)

    tree = edited(inputs, ONE, "one-cluster/kubeadm/ai/join-storage.yaml", untainted)
    blocked(
        run(site, inputs, tree=tree), "nodes", "st01", "lacks its pool's taints: dedicated=aistor:NoSchedule"
    )


def test_a_pool_never_labelled(site, inputs):
    texts = runbook_without(inputs, ONE, r"^kubectl label node --overwrite cmp01 .*\n.*\n")
    blocked(
        run(site, inputs, texts=texts),
        "cmp01",
        "lacks its pool's labels: node-role.kubernetes.io/compute=true",
    )


def test_a_tenant_store_borrowing_a_platform_role(site, inputs):
    """The vault binds each namespace's role to that namespace's reader: a tenant's store that names
    Harbor's role cannot log in, so its secrets never arrive."""

    def borrow(doc):
        if doc["kind"] == "SecretStore" and doc["metadata"]["namespace"] == "ai-research":
            doc["spec"]["provider"]["vault"]["auth"]["kubernetes"]["role"] = "external-secrets-harbor"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/secret-store/ai-research.secretstore", borrow)
    blocked(
        run(site, inputs, tree=tree),
        "ai-secret-store",
        "SecretStore ai-research/site-vault",
        "vault role external-secrets-harbor is not bound to namespace ai-research",
    )


def test_a_tenant_quota_below_its_own_acceptance_job(site, inputs):
    def one_node_of_gpus(doc):
        doc["spec"]["hard"]["requests.nvidia.com/gpu"] = "8"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/namespaces/ai-research.resourcequota", one_node_of_gpus)
    blocked(
        run(site, inputs, tree=tree),
        "ai-tenant-ai-research", "Job ai-research/nccl-allreduce",
        "ResourceQuota quota: nvidia.com/gpu: 0 in use + 96 asked > 8",
    )  # fmt: skip


def test_a_tenant_pod_without_a_cpu_request_under_the_quota(site, inputs):
    def no_cpu(doc):
        for c in doc["spec"]["template"]["spec"]["containers"]:
            c["resources"]["requests"].pop("cpu")

    tree = edited(inputs, ONE, "one-cluster/apps/ai/models/ai-research.statefulset", no_cpu)
    blocked(
        run(site, inputs, tree=tree),
        "ai-models", "ResourceQuota quota bounds cpu: container vllm requests none",
    )  # fmt: skip


def test_kubelets_without_an_approver_of_their_serving_certificates(site, inputs):
    tree = {p: docs for p, docs in inputs[ONE][0].items() if "/kubelet-csr-approver/" not in str(p)}
    blocked(
        run(site, inputs, tree=tree),
        "ai-metrics-server", "cannot verify 102 kubelet(s)", "wait for an approver of kubernetes.io/kubelet-serving",
    )  # fmt: skip


def test_an_approver_that_does_not_know_the_gpu_nodes(site, inputs):
    def without_gpu_nodes(doc):
        if doc["kind"] == "Deployment":
            for e in doc["spec"]["template"]["spec"]["containers"][0]["env"]:
                if e["name"] == "PROVIDER_REGEX":
                    e["value"] = e["value"].replace("gpu", "xpu")

    tree = edited(inputs, ONE, "one-cluster/apps/ai/kubelet-csr-approver/", without_gpu_nodes)
    blocked(run(site, inputs, tree=tree), "ai-metrics-server", "cannot verify 12 kubelet(s) (gpu01, ...)")


def test_kubelets_serving_self_signed_certificates(site, inputs):
    def self_signed(doc):
        doc.pop("serverTLSBootstrap", None)

    tree = edited(inputs, ONE, "one-cluster/kubeadm/ai/init-", self_signed)
    blocked(
        run(site, inputs, tree=tree), "ai-metrics-server", "self-signed certificates (no serverTLSBootstrap)"
    )


def test_a_spoke_manager_missing_a_kind_its_apps_render(site, inputs):
    """Argo CD manages the spoke as argocd-manager, scoped to the kinds the spoke's apps render: drop
    one and the app that renders it cannot sync."""

    def without_objectstores(doc):
        for rule in doc["rules"]:
            if "objectstores" in rule["resources"]:
                rule["resources"].remove("objectstores")

    tree = edited(inputs, TWO, "two-cluster/apps/aistor/argocd-manager/clusterrole.", without_objectstores)
    blocked(
        run(site, inputs, TWO, tree=tree),
        "aistor-aistor", "ObjectStore", "Argo CD manages aistor as argocd-manager/argocd-manager",
        "may not create objectstores.aistor.min.io",
    )  # fmt: skip


def test_a_spoke_without_an_issued_token(site, inputs):
    texts = runbook_without(inputs, TWO, r"^kubectl -n argocd-manager create token .*\n")
    blocked(run(site, inputs, TWO, texts=texts), "Argo CD has no credential for aistor")


def test_a_server_synced_before_the_keys_it_mounts(site, inputs):
    """A pod that mounts a Secret another app makes waits for that app: Velero's server synced before
    velero-config (its AIStor keys) never turns Healthy, and the root stops there."""

    tree, texts = rewaved(inputs, ONE, "ai/velero-config", 99)
    blocked(
        run(site, inputs, tree=tree, texts=texts),
        "ai-velero", "Deployment velero/velero", "Secret velero-aistor is not there: ai-velero-config makes it and has not synced",
    )  # fmt: skip


def test_the_csi_driver_synced_before_its_credentials(site, inputs):
    """The day-1 deadlock the stricter simulation found: the PowerScale CSI node plugin mounts the
    credentials and certificates `powerscale` writes; synced before them, it never turns Healthy."""

    tree, texts = rewaved(inputs, ONE, "ai/powerscale", 99)
    blocked(
        run(site, inputs, tree=tree, texts=texts),
        "ai-csi-isilon",
        "ai-powerscale makes it and has not synced",
    )


def test_an_approver_that_judges_the_aistor_operators_certificate(site, inputs):
    """kubelet-csr-approver denies a kubelet-serving CSR whose requester is not the node it names,
    unless told to ignore those: AIStor's operator requests its store's certificate on that signer."""

    def judging_all(doc):
        if doc["kind"] == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            container["env"] = [e for e in container["env"] if e["name"] != "IGNORE_NON_SYSTEM_NODE"]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/kubelet-csr-approver/", judging_all)
    blocked(
        run(site, inputs, tree=tree), "ai-aistor", "Waiting for MinIO TLS Certificate",
        "denies the operator's request for the store's TLS certificate",
    )  # fmt: skip
