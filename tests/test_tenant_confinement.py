"""Tenants confined (security review H3): Kueue manages every job and pod of a tenant namespace, the
system pools are tainted, and no platform component runs in a tenant's namespace."""

from __future__ import annotations

import yaml

from sitegen.check.bringup import timeline

from .bringup_cases import ONE, blocked, edited, run

MODEL = "one-cluster/apps/ai/models/ai-research.statefulset"
QUEUE = "kueue.x-k8s.io/queue-name"


def _unqueued(doc):
    doc["metadata"]["labels"].pop(QUEUE)


def test_a_tenant_workload_without_a_queue_is_held_by_kueue(site, inputs):
    tree = edited(inputs, ONE, MODEL, _unqueued)
    blocked(run(site, inputs, tree=tree), "llama-3-3-70b", "held by Kueue: no queue-name label")


def test_without_manage_jobs_without_queue_name_it_runs_outside_every_quota(site, inputs):
    """The defect put back: Kueue's configuration leaves unlabeled jobs alone."""

    def unmanaged(doc):
        key = "controller_manager_config.yaml"
        if doc.get("kind") == "ConfigMap" and key in (doc.get("data") or {}):
            config = yaml.safe_load(doc["data"][key])
            assert config.pop("manageJobsWithoutQueueName") is True
            doc["data"][key] = yaml.safe_dump(config)

    tree = edited(inputs, ONE, "one-cluster/apps/ai/kueue/", unmanaged)
    tree = edited({ONE: (tree, inputs[ONE][1])}, ONE, MODEL, _unqueued)
    result = run(site, inputs, tree=tree)
    assert "held by Kueue" not in timeline(result)


def test_no_platform_workload_runs_in_a_tenant_namespace(site, docs):
    """The vLLM router lived in the serving tenant's namespace: a system-pool toleration a tenant's
    whitelist then had to admit, and the API keys beside the tenant's accounts."""
    tenants = set(site.tenants)
    for doc in docs:
        if doc.namespace in tenants and doc.kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            assert doc.file.parts[3] in ("models", f"tenant-{doc.namespace}") or doc.file.parts[3].startswith(
                "gpu-"
            ), doc.file


def test_an_unprivileged_container_selects_no_gpu_by_environment(docs):
    """H3: the toolkit's installer accepts NVIDIA_VISIBLE_DEVICES from unprivileged containers unless told
    not to; with CDI the device plugin's allocation is the only way to a GPU."""
    (policy,) = [d for d in docs if d.kind == "ClusterPolicy" and d.variant == "one-cluster"]
    env = {e["name"]: e["value"] for e in policy.body["spec"]["toolkit"]["env"]}
    assert env["ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"] == "false"
    assert policy.body["spec"]["cdi"]["enabled"] is True


def test_a_tenant_job_cannot_run_as_the_vault_reader(site, inputs):
    """Security review L9: every vault reader may create TokenReviews (Vault reviews each login with
    the login's own token); a tenant pod running as it would hold that oracle. The API server refuses it."""

    def as_reader(doc):
        doc["spec"]["template"]["spec"]["serviceAccountName"] = "vault-reader"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/tenant-ai-research/ai-research.job", as_reader)
    blocked(run(site, inputs, tree=tree), "sitegen-tenant-pods", "vault-reader")
