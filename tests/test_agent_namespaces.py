"""Node agents apart from their controllers (issue 26): a privileged namespace holds the agents that
need host access and nothing else, but where an operator deploys its agents into its own namespace.
Charts that render both in one release (NFD, TopoLVM, csi-isilon) are released twice."""

from __future__ import annotations

import pytest

from constructs.objects import pod_account
from sitegen.check.allowlists import SYSTEM_NAMESPACE, allow_lists
from sitegen.check.bringup.kube import pod_template
from sitegen.components.base import ChartAgents
from sitegen.components.catalog import COMPONENTS
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.components.networking.network_operator import NetworkOperator
from sitegen.tree.documents import load_tree

from .conftest import DIST

SPLIT = sorted((c for c in COMPONENTS if issubclass(c, ChartAgents)), key=lambda c: c.name)


@pytest.fixture(scope="module")
def apps():
    """one-cluster app -> its documents."""
    found: dict[str, list] = {}
    for doc in load_tree(DIST):
        if doc.variant == "one-cluster" and doc.cluster == "ai" and not doc.is_values:
            found.setdefault(doc.file.parent.name, []).append(doc)
    return found


def test_only_the_operators_keep_controllers_beside_their_agents(site):
    """The GPU and Network Operators deploy their operands into the namespace they run in: those two
    stay reviewed (PSA-004), beside kube-system, where Kubernetes puts its own; no other privileged
    namespace holds a controller."""
    assert set(allow_lists(site).privileged_controllers) == {
        SYSTEM_NAMESPACE,
        GpuOperator.namespace,
        NetworkOperator.namespace,
    }
    # NFD's chart renders its worker alone by its values (test_gpu_fabric.py); these two cannot
    assert {c.name for c in SPLIT} == {"csi-isilon-node", "topolvm-node"}


@pytest.mark.parametrize("agents", SPLIT, ids=lambda c: c.name)
def test_the_two_releases_split_the_chart(apps, agents):
    """The agents' app ships the DaemonSets with their own accounts and RBAC, bound in their
    namespace; the controllers' app ships no DaemonSet; only the shared objects are in both."""
    mine, theirs = apps[agents.name], apps[agents.controllers.name]
    assert mine and theirs
    assert {d.namespace for d in mine if d.namespace} == {agents.namespace}
    assert not [d for d in theirs if d.kind == "DaemonSet"]
    daemons = [d for d in mine if d.kind == "DaemonSet"]
    assert daemons and all(d.kind in ("DaemonSet", "ServiceAccount", "ConfigMap", "Role", "RoleBinding",
                                      "ClusterRole", "ClusterRoleBinding") for d in mine)  # fmt: skip
    accounts = {d.name for d in mine if d.kind == "ServiceAccount"}
    for daemon in daemons:
        assert pod_account(dict(pod_template(daemon.body).spec)) in accounts, daemon.ref
    for binding in (d for d in mine if d.kind in ("ClusterRoleBinding", "RoleBinding")):
        assert {s["namespace"] for s in binding.body["subjects"]} == {agents.namespace}, binding.ref
    both = {(d.kind, d.name) for d in mine} & {(d.kind, d.name) for d in theirs}
    assert all(agents.is_shared(kind, name) for kind, name in both), both
