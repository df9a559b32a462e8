"""Compliant workloads pass the placement rules; a node agent tolerates exactly the pools it is listed
for, and one not listed may not reach every node; a tenant's toleration whitelist holds what admission
adds to its pods."""

from __future__ import annotations

import dataclasses
import re

import pytest

from sitegen.check import validate as validate_module
from sitegen.check.allowlists import AllowLists, allow_lists
from sitegen.components.base import NodeAgent

from .conftest import add, validate
from .policy_manifests import (
    AISTOR_TAINT,
    COMPUTE,
    CP_TAINT,
    GPU,
    GPU_TAINT,
    INFRA,
    INFRA_TAINT,
    container,
    namespace,
    workload,
)

pytestmark = pytest.mark.tree_variants("one-cluster")  # what these tests break is in one-cluster


def test_compliant_workloads_pass(tree):
    add(tree, "one-cluster/apps/ai/ok/ns.yaml", namespace("demo"))
    add(
        tree,
        "one-cluster/apps/ai/ok/deny.yaml",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": "demo"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        },
    )
    add(
        tree,
        "one-cluster/apps/ai/ok/infra.yaml",
        workload(name="api", selector=INFRA, tolerations=[INFRA_TAINT]),
    )
    add(
        tree, "one-cluster/apps/ai/ok/gpu.yaml", workload(name="model", selector=GPU, tolerations=[GPU_TAINT])
    )
    add(
        tree,
        "one-cluster/apps/ai/ok/job.yaml",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": "demo"},
            "spec": {
                "template": {
                    "spec": {"nodeSelector": COMPUTE, "restartPolicy": "Never", "containers": [container()]}
                }
            },
        },
    )
    result = validate(tree)
    assert result.exit_code == 0, result.stdout


def test_listed_node_agent_must_tolerate_exactly_its_pools(tree, monkeypatch):
    def with_agent(site) -> AllowLists:
        found = allow_lists(site)
        agents = {
            key: {**agents, "DaemonSet/demo/agent": NodeAgent(frozenset({"*"}), "test agent")}
            if key == ("one-cluster", "ai")
            else agents
            for key, agents in found.agents.items()
        }
        return dataclasses.replace(found, agents=agents)

    monkeypatch.setattr(validate_module, "allow_lists", with_agent)
    every_taint = [CP_TAINT, GPU_TAINT, AISTOR_TAINT, INFRA_TAINT]
    rel = add(
        tree, "one-cluster/apps/ai/agent/ds.yaml", workload("DaemonSet", "agent", tolerations=every_taint)
    )
    assert validate(tree).exit_code == 0, validate(tree).stdout
    add(tree, rel, workload("DaemonSet", "agent", tolerations=every_taint[:2]))
    result = validate(tree)
    assert result.exit_code == 1 and "PLC-005 agents-reach" in result.stdout
    add(tree, rel, workload("DaemonSet", "agent", tolerations=[{"operator": "Exists"}]))  # tolerates all
    assert validate(tree).exit_code == 0


def test_unlisted_agent_on_every_node_is_refused(tree):
    add(
        tree,
        "one-cluster/apps/ai/agent/ds.yaml",
        workload("DaemonSet", "agent", tolerations=[{"operator": "Exists"}]),
    )
    result = validate(tree)
    assert "PLC-004 control-plane-taint" in result.stdout


def test_a_whitelist_without_the_tolerations_the_plugin_adds(tree):
    """PodTolerationRestriction merges the memory-pressure toleration into every pod that is not
    BestEffort before it checks the whitelist: a tenant whitelist without it refuses the tenant's own
    jobs, and PLC-008 says so before any cluster does."""
    path = tree / "one-cluster/apps/ai/namespaces/namespace.ai-research.yaml"
    text = path.read_text()
    pattern = re.compile(
        r',?\{\\?"effect\\?":\\?"NoSchedule\\?",\\?"key\\?":\\?"node.kubernetes.io/memory-pressure\\?"[^}]*\}'
    )
    stripped, count = pattern.subn("", text)
    assert count == 1, text
    path.write_text(stripped)
    result = validate(tree)
    assert result.exit_code == 1
    assert "PLC-008" in result.stdout and "node.kubernetes.io/memory-pressure" in result.stdout, result.stdout
    assert "PodTolerationRestriction adds it to a pod that is not BestEffort" in result.stdout
