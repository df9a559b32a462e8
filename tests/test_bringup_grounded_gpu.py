"""The bring-up simulation grounded in the real systems (issue 24), on the GPU nodes: the tools their
host scripts find, Kueue's admission of their jobs, their burn-in before they take work, and the guard
that cordons a broken one. Each defect put back into a copy of the hydrated tree is named with
component, object and reason; harmless changes still pass."""

from __future__ import annotations

import yaml

from sitegen.check.bringup import timeline

from .bringup_cases import ONE, blocked, edited, run, runbook_without

# --- host scripts: the tools their hosts have when the runbook runs them -------------------------------

PREFLIGHT = "one-cluster/kubeadm/ai/fabric-preflight-gpu.sh"


def _script(inputs, path: str, added: str) -> dict:
    texts = dict(inputs[ONE][1])
    key = next(p for p in texts if str(p) == path)
    texts[key] = texts[key] + added
    return texts


def test_a_preflight_that_runs_nvidia_smi_before_the_driver_exists(site, inputs):
    texts = _script(inputs, PREFLIGHT, "topo=$(nvidia-smi topo -m 2>&1)\n")
    blocked(run(site, inputs, ONE, texts=texts), "fabric-preflight-gpu.sh", "runs nvidia-smi on the gpu hosts",
            "the hosts have not joined")  # fmt: skip


def test_a_preflight_that_needs_an_ofed_tool(site, inputs):
    texts = _script(inputs, PREFLIGHT, "links=$(ibdev2netdev)  # the OFED view\n")
    blocked(
        run(site, inputs, ONE, texts=texts), "runs ibdev2netdev", "nothing in this site's plan installs it"
    )


def test_the_topology_check_runs_once_the_driver_is_there(site, inputs):
    result = run(site, inputs, ONE)
    steps = [e.step for e in result.timeline]
    assert any("GPU topology: pool gpu" in s for s in steps), steps


# --- Kueue: what admission puts into the pods ---------------------------------------------------------


def test_a_job_placed_by_its_flavor_is_admitted_and_runs(site, inputs):
    """No false positive: a job without GPU tolerations or node selector of its own, whose
    ResourceFlavor carries both, is placed on the GPU nodes as Kueue does it (flavor injection)."""

    def bare(doc):
        spec = doc["spec"]["template"]["spec"]
        spec.pop("tolerations", None)
        spec.pop("nodeSelector", None)
        spec.pop("affinity", None)

    tree = edited(inputs, ONE, "one-cluster/apps/ai/tenant-ai-research/ai-research.job.nccl-allreduce", bare)
    result = run(site, inputs, ONE, tree=tree)
    assert result.ok, result.blocker
    assert "Job ai-research/nccl-allreduce ran to completion" in "\n".join(e.what for e in result.timeline)


def test_a_flavor_that_does_not_exist_keeps_jobs_out(site, inputs):
    tree = edited(inputs, ONE, "one-cluster/apps/ai/gpu-queues/resourceflavor.b300.yaml", lambda doc: False)
    blocked(run(site, inputs, ONE, tree=tree), "ResourceFlavor b300 does not exist")


def test_a_gang_job_with_a_node_down_gives_its_nodes_back(site, inputs):
    """Day 2: the acceptance job submitted while a GPU node is down is evicted and requeued by
    waitForPodsReady (its nodes and quota given back), and runs once the node returns."""
    result = run(site, inputs, ONE)
    said = timeline(result)
    assert "submitted while gpu01 is down: Job ai-research/nccl-allreduce: evicted by Kueue" in said
    assert "gpu01 back: Job ai-research/nccl-allreduce admitted again and ran to completion" in said


def test_a_gang_job_without_wait_for_pods_ready_holds_the_gpus(site, inputs):
    """Without waitForPodsReady the acceptance job, admitted while the GPU nodes are cordoned for their
    burn-in, holds the whole GPU quota with pods that cannot start: the burn-in (in the same queue) is
    never admitted, and the nodes stay cordoned for good. With it, Kueue gives the quota back."""

    def without_wait(doc):
        config = yaml.safe_load(doc["data"]["controller_manager_config.yaml"])
        config.pop("waitForPodsReady")
        doc["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)

    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/kueue/kueue-system.configmap.kueue-manager-config", without_wait
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "GPU burn-in: pool gpu",
        "Job gpu-health/burn-in-gpu01: never completes: ClusterQueue gpu cannot make room",
    )


# --- the burn-in: GPU nodes take work once it passed --------------------------------------------------


def test_gpu_nodes_take_work_only_after_their_burn_in(site, inputs):
    said = timeline(run(site, inputs, ONE))
    assert "cordoned gpu01, gpu02, gpu03, ... gpu12" in said
    assert said.index("12 Jobs completed in gpu-health") < said.index("uncordoned gpu01")
    # the timeline tells what happened in order: a Job's completion before the wait that saw it
    assert said.index("burn-in-gpu12 ran to completion") < said.index("12 Jobs completed in gpu-health")


def test_gpu_nodes_never_uncordoned_hold_back_the_tenants(site, inputs):
    texts = runbook_without(inputs, ONE, r"^kubectl uncordon .*\n")
    blocked(run(site, inputs, ONE, texts=texts), "ai-tenant-ai-research", "node.kubernetes.io/unschedulable")


def test_a_burn_in_that_never_ran_is_not_waited_past(site, inputs):
    texts = runbook_without(inputs, ONE, r"^kubectl -n gpu-health create job burn-in-gpu07 .*\n")
    blocked(
        run(site, inputs, ONE, texts=texts),
        "GPU burn-in: pool gpu",
        "Job gpu-health/burn-in-gpu07",
        "never completes",
    )


def test_burn_in_pairs_run_in_rounds_that_share_no_node(site, inputs):
    said = timeline(run(site, inputs, ONE))
    assert said.count("6 Jobs completed in gpu-health") == 2  # two rounds of the 12 ring pairs


def test_burn_in_pairs_started_all_at_once_may_wait_forever(site, inputs):
    """The first round's wait taken out: the second round starts while the first holds its nodes."""
    texts = runbook_without(inputs, ONE, r"^jobs_done gpu-health \d+ job/nccl-pair-gpu01-gpu02 .*\n")
    blocked(
        run(site, inputs, ONE, texts=texts),
        "GPU burn-in: pool gpu",
        "Job gpu-health/nccl-pair-gpu02-gpu03",
        "waits for the same node gpu02",
    )


# --- the GPU node guard -------------------------------------------------------------------------------


def test_a_broken_gpu_node_is_cordoned_by_the_guard(site, inputs):
    said = timeline(run(site, inputs, ONE))
    assert "day 2: a GPU of gpu12 reports Xid 79: gpu-node-guard cordoned gpu12" in said


def test_a_guard_that_may_not_patch_nodes_leaves_the_node_schedulable(site, inputs):
    def read_only(doc):
        doc["rules"][0]["verbs"] = ["get", "list"]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/gpu-node-guard/clusterrole.gpu-node-guard", read_only)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "reports Xid 79",
        "gpu12",
        "the guard's account gpu-node-guard/gpu-node-guard may not patch nodes",
    )


def test_a_guard_kept_from_prometheus_leaves_the_node_schedulable(site, inputs):
    def without_guard(doc):
        doc["spec"]["ingress"] = [
            r for r in doc["spec"]["ingress"]
            if "gpu-node-guard" not in str(r.get("fromEndpoints"))
        ]  # fmt: skip

    tree = edited(
        inputs,
        ONE,
        "one-cluster/apps/ai/network-policies/monitoring.ciliumnetworkpolicy.site-flows",
        without_guard,
    )
    blocked(run(site, inputs, ONE, tree=tree), "reports Xid 79", "keep the guard from Prometheus")


def test_a_policy_that_refuses_the_guards_label_leaves_the_node_schedulable(site, inputs):
    """The policy and the guard must agree on the label: one built for another label refuses the
    guard's cordon, and bringup's day 2 says so."""

    def other_label(doc):
        (validation,) = doc["spec"]["validations"]
        validation["expression"] = validation["expression"].replace(
            "sitegen.io/auto-cordoned", "sitegen.io/other"
        )

    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/admission-policies/validatingadmissionpolicy.sitegen-guard-cordons-only",
        other_label,
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree),
        "reports Xid 79",
        "the API server refuses the guard's cordon: ValidatingAdmissionPolicy sitegen-guard-cordons-only",
    )
