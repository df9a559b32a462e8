"""Tenants' priority and cohorts (tenants.yaml): the ClusterQueues a cohort gets, the admission policy
that holds a tenant to its priority, and Kueue's borrowing and reclaiming as the bring-up replays it."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.check.bringup import bringup, from_dist, timeline
from sitegen.model import load_site
from sitegen.tree.documents import load_tree

from .conftest import CONFIG, edit_yaml, invoke_sitegen, run_sitegen

ONE = "one-cluster"
TENANT = Request("oidc:alice", ("nlp-users", "system:authenticated"))
ARGO = Request("system:serviceaccount:argocd:argocd-application-controller")
KUEUE = Request("system:serviceaccount:kueue-system:kueue-controller-manager", operation="UPDATE")


def _cohorts(tenants: dict[str, Any]) -> None:
    """ai-research keeps 48 GPUs of its own (cohort `research`) and may run high; `nlp` joins the
    shared queue at low priority."""
    tenants["ai-research"].update(priority="high", cohort="research", guaranteed_gpus=48)
    tenants["nlp"] = {
        "description": "language models",
        "priority": "low",
        "quota": {"storage_gb": 100, "volumes": 5},
        "object_storage": {"scratch": {"quota_tb": 10, "expire_days": 7}},
    }


@pytest.fixture(scope="module")
def cohort_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("cohorts")
    config = root / "config"
    shutil.copytree(CONFIG, config)
    edit_yaml(config, "tenants.yaml", _cohorts)
    result = run_sitegen("synth", "--config", config, "--out", root / "dist", "--variant", ONE)
    assert result.returncode == 0, result.stderr
    return config, root / "dist"


def _app(dist: Path, app: str) -> dict[str, dict[str, Any]]:
    """An app's objects by `<kind>/<name>`."""
    found = {}
    for path in sorted((dist / ONE / "apps" / "ai" / app).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


def _nominal(queue: dict[str, Any], resource: str) -> int:
    (flavor,) = queue["spec"]["resourceGroups"][0]["flavors"]
    return int(next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == resource))


def test_a_cohort_gets_its_guaranteed_nodes_and_lends_them(cohort_site):
    _, dist = cohort_site
    queues = _app(dist, "gpu-queues")
    research, shared, idle = (queues[f"ClusterQueue/{n}"] for n in ("gpu-research", "gpu", "gpu-idle"))
    assert (_nominal(research, "nvidia.com/gpu"), _nominal(shared, "nvidia.com/gpu")) == (48, 48)
    assert _nominal(research, "cpu") == _nominal(shared, "cpu") > 0  # six whole nodes each
    assert _nominal(idle, "nvidia.com/gpu") == 0  # the health checks only borrow
    for queue in (research, shared, idle):
        assert queue["spec"]["cohortName"] == "gpu-pools"
        assert queue["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
        assert "borrowWithinCohort" not in queue["spec"]["preemption"]
    assert research["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ai-research"]
    local = _app(dist, "tenant-ai-research")["LocalQueue/ai-research"]
    assert local["spec"]["clusterQueue"] == "gpu-research"
    assert _app(dist, "tenant-nlp")["LocalQueue/nlp"]["spec"]["clusterQueue"] == "gpu"
    assert _app(dist, "gpu-health")["LocalQueue/gpu-health"]["spec"]["clusterQueue"] == "gpu-idle"


def test_the_seed_site_keeps_one_queue_without_a_cohort(docs):
    queues = [d for d in docs if d.variant == ONE and d.kind == "ClusterQueue"]
    assert [q.name for q in queues] == ["gpu"]
    assert "cohortName" not in queues[0].body["spec"]
    assert "reclaimWithinCohort" not in queues[0].body["spec"]["preemption"]


def _job(namespace: str, priority: str | None) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": namespace}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": namespace, "labels": labels},
    }


@pytest.fixture(scope="module")
def policies(cohort_site) -> dict[str, Policy]:
    _, dist = cohort_site
    docs = [d.body for d in load_tree(dist) if d.cluster == "ai"]
    return {p.name: p for p in denying_policies(docs)}


def test_a_tenant_is_held_to_its_priority(cohort_site, policies):
    _, dist = cohort_site
    labels = {
        name: _app(dist, "namespaces")[f"Namespace/{name}"]["metadata"]["labels"][
            "sitegen.io/tenant-priority"
        ]
        for name in ("ai-research", "nlp")
    }
    assert labels == {"ai-research": "high", "nlp": "low"}
    low, high = policies["sitegen-tenant-priority-low"], policies["sitegen-tenant-priority-high"]
    managed = {"sitegen.io/kueue-managed": "true"}
    assert low.matches(_job("nlp", None), {**managed, "sitegen.io/tenant-priority": "low"}, "CREATE")
    assert not low.matches(_job("nlp", None), {**managed, "sitegen.io/tenant-priority": "high"}, "CREATE")
    refused = low.refusal(_job("nlp", None), TENANT)
    assert refused and "priority is low (tenants.yaml)" in refused and "low, health" in refused
    assert low.refusal(_job("nlp", "high"), TENANT)
    assert low.refusal(_job("nlp", "low"), TENANT) is None
    assert low.refusal(_job("nlp", "serving"), ARGO) is None  # what Git holds: the reserved classes' policy
    # a Job made before the tenant's priority changed is still unsuspended by Kueue
    assert low.refusal(_job("nlp", None), KUEUE, old=_job("nlp", None)) is None
    assert high.refusal(_job("ai-research", "high"), TENANT) is None
    assert high.refusal(_job("ai-research", None), TENANT) is None
    templated = _job("nlp", "low")
    templated["spec"] = {"template": {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "high"}}}}
    assert low.refusal(templated, TENANT)  # the job controller's copy of its template would pass
    assert "sitegen-tenant-priority-normal" not in policies  # no tenant of that priority


def _borrowed_back(tree: dict[PurePosixPath, list[dict[str, Any]]]) -> None:
    """nlp submits a 6-node job to the shared queue while ai-research's acceptance run borrows it."""
    source = PurePosixPath(ONE, "apps", "ai", "tenant-ai-research")
    target = PurePosixPath(ONE, "apps", "ai", "tenant-nlp")
    for name in ("configmap.nccl-allreduce-script", "service.nccl-allreduce", "job.nccl-allreduce"):
        docs = copy.deepcopy(tree[source / f"ai-research.{name}.yaml"])
        for doc in docs:
            doc["metadata"]["namespace"] = "nlp"
            if doc["kind"] == "Job":
                doc["metadata"]["labels"].update(
                    {"kueue.x-k8s.io/queue-name": "nlp", "kueue.x-k8s.io/priority-class": "low"}
                )
                doc["spec"]["completions"] = doc["spec"]["parallelism"] = 6
        tree[target / f"nlp.{name}.yaml"] = docs


def test_a_queue_takes_back_its_nominal_quota_from_a_borrower(cohort_site):
    config, dist = cohort_site
    site = load_site(config)
    tree, texts = from_dist(dist, ONE)
    assert bringup(site, ONE, tree, texts).ok  # the acceptance run borrows the shared queue's idle half
    tree = dict(tree)
    _borrowed_back(tree)
    text = timeline(bringup(site, ONE, tree, texts))
    assert (
        "Job ai-research/nccl-allreduce preempted by Job nlp/nccl-allreduce: "
        "ClusterQueue gpu takes back its nominal quota" in text
    ), text[-3000:]


def test_long_running_work_that_borrows_is_named(cohort_site, tmp_path, linked_copy):
    """A cohort whose model servers need more than its nominal quota borrows for them; the queue that
    lent takes the GPUs back by evicting them (KUE-001)."""
    _, dist = cohort_site
    tree = tmp_path / "dist"
    linked_copy(dist, tree)
    path = tree / ONE / "apps" / "ai" / "gpu-queues" / "clusterqueue.gpu-research.yaml"
    head, body = path.read_text().split("---\n", 1)
    queue = yaml.safe_load(body)
    for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if r["name"] == "nvidia.com/gpu":
            r["nominalQuota"] = 0
    path.write_text(head + "---\n" + yaml.safe_dump(queue, sort_keys=False))
    result = invoke_sitegen("validate", "--dist", tree)
    assert result.exit_code == 1, result.output
    assert (
        "ClusterQueue gpu-research's long-running work needs 8 nvidia.com/gpu, its nominal quota is 0: "
        "it borrows, and the queue that lent takes it back by evicting it" in result.output
    ), result.output


def test_the_gpu_queues_admit_only_the_namespaces_kueue_manages():
    """A ClusterQueue with `namespaceSelector: {}` took workloads from a LocalQueue in any namespace (a
    platform app's, one made by hand: security review L13). The queues select the namespaces Kueue
    manages, whose label only the applier may set (namespace-confinement); every LocalQueue of dist/ is
    in one of them."""
    from constructs.kueue import MANAGED_NAMESPACE_LABEL
    from sitegen.check.bringup.kueue import selects

    from .conftest import DIST

    docs = load_tree(DIST)
    for variant in ("one-cluster", "two-cluster"):
        mine = [d for d in docs if d.variant == variant]
        labels = {d.name: (d.body["metadata"].get("labels") or {}) for d in mine if d.kind == "Namespace"}
        queues = [d for d in mine if d.kind == "ClusterQueue"]
        assert queues
        for queue in queues:
            selected = {ns for ns, found in labels.items() if selects(queue.body, found)}
            managed = {ns for ns, found in labels.items() if found.get(MANAGED_NAMESPACE_LABEL) == "true"}
            assert selected and selected <= managed, (queue.file, selected - managed)
        local = {d.namespace for d in mine if d.kind == "LocalQueue"}
        assert local and local <= {
            ns for ns, found in labels.items() if found.get(MANAGED_NAMESPACE_LABEL) == "true"
        }
