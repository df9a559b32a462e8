"""RBC-001: no account on a node that runs tenant code reaches the rest of the cluster unreviewed
(the GPU pools: Kueue places every tenant job there)."""

from __future__ import annotations

import dataclasses

import yaml

from sitegen.check import validate as validate_module
from sitegen.check.allowlists import allow_lists
from sitegen.check.node_rbac import capabilities
from sitegen.components.node_access import CHANGES_NODES, CREATES_PODS, GRANTS_RBAC, READS_SECRETS

from .conftest import DIST, add, validate

CRB = "one-cluster/apps/ai/network-operator/clusterrolebinding.network-operator.yaml"


def test_the_network_operators_group_binding_put_back_is_refused(tree):
    """The chart's own binding: every account of the namespace, the agents on GPU nodes included."""
    path = tree / CRB
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    docs[0]["subjects"] = [
        {
            "kind": "Group",
            "apiGroup": "rbac.authorization.k8s.io",
            "name": "system:serviceaccounts:nvidia-network-operator",
        }
    ]
    path.write_text(yaml.safe_dump_all(docs))
    result = validate(tree)
    assert result.exit_code == 1
    found = [line for line in result.stdout.splitlines() if "RBC-001" in line]
    assert found and all(
        line.startswith(f"{CRB} [doc 0] ClusterRoleBinding network-operator") for line in found
    )
    said = " ".join(found)
    assert "nvidia-network-operator/(accounts its operator makes)" in said
    assert READS_SECRETS in said and CREATES_PODS in said


def test_a_node_agents_grant_needs_its_review(tree, monkeypatch):
    def unreviewed(site):
        found = allow_lists(site)
        kept = {k: v for k, v in found.node_rbac.items() if not k.startswith("topolvm-node/")}
        return dataclasses.replace(found, node_rbac=kept)

    monkeypatch.setattr(validate_module, "allow_lists", unreviewed)
    result = validate(tree)
    assert result.exit_code == 1
    assert (
        "ClusterRoleBinding topolvm-node:node: RBC-001 node-escalation: $.subjects: "
        f"topolvm-node/topolvm-node runs on the gpu pool(s), where tenant code runs, and {CHANGES_NODES}"
    ) in result.stdout


def _reader(tree, name: str, pod_placement: dict) -> None:
    """A Deployment whose account may read every Secret, placed by `pod_placement`."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "demo"}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "demo"}],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [{"name": "c", "image": "x:1"}],
                    **pod_placement,
                },
            },
        },
    }
    add(tree, f"one-cluster/apps/ai/{name}/objects.yaml", account, role, binding, deployment)


def test_only_accounts_that_land_on_tenant_nodes_are_judged(tree):
    """The same grant: on the infra pool it is other rules' business, on the GPU pool it is refused."""
    _reader(tree, "infra-reader", {"nodeSelector": {"node-role.kubernetes.io/infra": "true"}})
    _reader(
        tree,
        "gpu-reader",
        {
            "nodeSelector": {"node-role.kubernetes.io/gpu": "true"},
            "tolerations": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        },
    )
    found = [line for line in validate(tree).stdout.splitlines() if "RBC-001" in line]
    assert len(found) == 1 and "ClusterRoleBinding gpu-reader" in found[0] and READS_SECRETS in found[0]


def test_what_counts_as_reaching_the_cluster():
    everything = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert capabilities(everything, cluster_wide=True) == [
        READS_SECRETS,
        CREATES_PODS,
        CHANGES_NODES,
        GRANTS_RBAC,
    ]
    # bound in another namespace: pods and RBAC there, but Secrets and Nodes are no namespace's
    assert capabilities(everything, cluster_wide=False) == [CREATES_PODS, GRANTS_RBAC]
    named = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["one"]}]
    assert capabilities(named, cluster_wide=True) == []  # one named Secret is not every Secret
    jobs = [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}]
    assert capabilities(jobs, cluster_wide=True) == [CREATES_PODS]  # a Job makes pods
    impersonate = [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}]
    assert capabilities(impersonate, cluster_wide=True) == [GRANTS_RBAC]


DIRECTPV = "two-cluster/apps/aistor/aistor-volumemanager"


def test_the_directpv_node_server_back_on_the_controllers_account_is_refused(tree):
    """The chart's own wiring: node server and controller under one account, whose role reads every
    Secret and creates PersistentVolumes and CRDs, on every AIStor node."""
    path = tree / DIRECTPV / "directpv.daemonset.node-server.yaml"
    (daemonset,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    daemonset["spec"]["template"]["spec"]["serviceAccountName"] = "directpv-min-io"
    path.write_text(yaml.safe_dump(daemonset))
    result = validate(tree)
    assert result.exit_code == 1
    found = [line for line in result.stdout.splitlines() if "RBC-002" in line]
    assert found, result.stdout
    assert all("DaemonSet directpv/node-server" in line for line in found)
    assert "node agent runs as directpv/directpv-min-io, the account of Deployment controller" in found[0]


def _triples(rules) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_directpv_node_server_holds_only_a_narrowing_of_the_charts_role():
    """Its ClusterRole grants nothing the chart's does not, reads no Secret, writes only DirectPV's
    own resources and events, and is bound to its account alone."""
    root = DIST / DIRECTPV
    chart = yaml.safe_load((root / "clusterrole.directpv-min-io.yaml").read_text().split("---", 1)[1])
    node = yaml.safe_load((root / "clusterrole.directpv-node-server.yaml").read_text().split("---", 1)[1])
    granted = _triples(node["rules"])
    assert granted and granted <= _triples(chart["rules"])
    assert not capabilities(node["rules"], cluster_wide=True)
    assert {resource for _, resource, _ in granted} & {"secrets", "customresourcedefinitions"} == set()
    writes = {(g, r) for g, r, v in granted if v not in ("get", "list", "watch")}
    assert {g for g, _ in writes} <= {"", "directpv.min.io"} and {r for g, r in writes if g == ""} == {
        "events"
    }
    binding = yaml.safe_load(
        (root / "clusterrolebinding.directpv-node-server.yaml").read_text().split("---", 1)[1]
    )
    assert binding["roleRef"]["name"] == node["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "directpv-node-server", "namespace": "directpv"}
    ]
