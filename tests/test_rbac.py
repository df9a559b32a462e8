"""One reading of RBAC (check/rbac.py) for the static rules and the bring-up, as the API server's
authorizer reads it; each case is one the separate evaluators it replaced read differently."""

from __future__ import annotations

from pathlib import PurePosixPath

from sitegen.check import node_rbac
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.objects import key_of
from sitegen.check.bringup.vault import Vault
from sitegen.check.power import powers
from sitegen.check.rbac import Rbac, allows
from sitegen.components.node_access import READS_SECRETS as NODE_READS_SECRETS
from sitegen.components.privilege import READS_SECRETS
from sitegen.tree.documents import Document

SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
AGENT = ("agents", "agent")


def role(name, rules=(), labels=None, aggregate=None):
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}}
    if labels:
        body["metadata"]["labels"] = labels
    if aggregate:
        body["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    else:
        body["rules"] = list(rules)
    return body


def binding(name, role_name, subject, kind="ClusterRoleBinding", namespace=None, role_kind="ClusterRole"):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [subject],
    }


def sa(namespace, name):
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def docs(*bodies):
    return [Document(PurePosixPath("v/apps/ai/x/f.yaml"), i, b) for i, b in enumerate(bodies)]


def test_resource_wildcards_and_names_as_the_authorizer_reads_them():
    token = {"apiGroups": [""], "resources": ["serviceaccounts/*"], "verbs": ["create"]}
    assert allows([token], ("create",), "", "serviceaccounts/token")
    assert allows([{**token, "resources": ["*/token"]}], ("create",), "", "serviceaccounts/token")
    assert not allows([token], ("create",), "", "serviceaccounts")
    named = {**token, "resourceNames": ["one"]}
    assert allows([named], ("create",), "", "serviceaccounts/token", name="one")
    assert not allows([named], ("create",), "", "serviceaccounts/token")  # a create names nothing


def test_an_aggregated_cluster_role_holds_what_its_selectors_collect():
    rbac = Rbac(
        [
            role("reader", aggregate={"site/aggregate-to-reader": "true"}),
            role("secret-part", [SECRETS], labels={"site/aggregate-to-reader": "true"}),
            binding("agent-reads", "reader", sa(*AGENT)),
        ]
    )
    assert rbac.may(AGENT, "list", "", "secrets")
    assert not rbac.may(("agents", "other"), "list", "", "secrets")


def test_subjects_a_role_binding_applies_to():
    bodies = [role("reader", [SECRETS])]
    without_namespace = {"kind": "ServiceAccount", "name": "agent"}  # the binding's namespace
    rbac = Rbac([*bodies, binding("b", "reader", without_namespace, kind="RoleBinding", namespace="agents")])
    assert rbac.may(AGENT, "get", "", "secrets", "agents")
    assert not rbac.may(AGENT, "get", "", "secrets", "other")
    assert not rbac.may(AGENT, "get", "", "secrets")  # a RoleBinding grants nothing cluster-wide
    everyone = {"kind": "Group", "name": "system:authenticated"}
    assert Rbac([*bodies, binding("b", "reader", everyone)]).may(AGENT, "get", "", "secrets")
    as_user = {"kind": "User", "name": "system:serviceaccount:agents:agent"}
    assert Rbac([*bodies, binding("b", "reader", as_user)]).may(AGENT, "get", "", "secrets")


def test_an_accounts_bindings_are_those_whose_subjects_name_it_in_their_order():
    """bindings_of looks bindings up by subject: the same bindings, in the same order, as asking each
    binding whether a subject of it names the account (`subject_is`, the authorizer's reading)."""
    subjects = [
        sa("agents", "agent"), sa("other", "agent"), {"kind": "ServiceAccount", "name": "agent"},
        {"kind": "User", "name": "system:serviceaccount:agents:agent"}, {"kind": "User", "name": "agent"},
        {"kind": "Group", "name": "system:serviceaccounts:agents"}, {"kind": "Group", "name": "system:serviceaccounts"},
        {"kind": "Group", "name": "system:authenticated"}, {"kind": "Group", "name": "agents"},
    ]  # fmt: skip
    bodies = [role("reader", [SECRETS])]
    for i, subject in enumerate(subjects):
        bodies.append(binding(f"c{i}", "reader", subject))
        for namespace in ("agents", "other"):
            bodies.append(binding(f"r{i}", "reader", subject, kind="RoleBinding", namespace=namespace))
    bodies.append({**binding("both", "reader", subjects[1]), "subjects": [subjects[1], subjects[5]]})
    rbac = Rbac(bodies)
    for account in (AGENT, ("other", "agent"), ("agents", "nobody"), ("elsewhere", "agent")):
        for namespace in (None, "agents", "other"):
            expected = [
                b
                for b in rbac.bindings
                if (b.cluster_wide or b.namespace == namespace) and b.applies_to(account)
            ]
            assert list(rbac.bindings_of(account, namespace)) == expected, (account, namespace)
    assert [b.name for b in rbac.bindings_of(AGENT)] == ["c0", "c3", "c5", "c6", "c7", "both"]


def test_the_bring_ups_rbac_is_read_again_when_a_role_or_binding_changes_and_only_then():
    cluster = Cluster("test", Vault())
    grant = binding("agent-reads", "reader", sa(*AGENT))
    cluster.apply(role("reader", [SECRETS]), "app")
    cluster.apply(grant, "app")
    read = cluster.rbac()
    assert read.may(AGENT, "get", "", "secrets")
    cluster.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}, "app"
    )
    assert cluster.rbac() is read  # no role or binding changed
    cluster.write_field(key_of(grant), "/subjects/0/name", "other", None)  # a person edits the binding
    assert not cluster.rbac().may(AGENT, "get", "", "secrets")
    cluster.apply(grant, "app")  # Argo CD's self-heal puts Git's back
    assert cluster.rbac().may(AGENT, "get", "", "secrets")
    cluster.delete(key_of(grant))
    assert not cluster.rbac().may(AGENT, "get", "", "secrets")


def test_bootstrap_roles_dist_binds_are_known_by_name():
    rbac = Rbac([binding("delegator", "system:auth-delegator", sa(*AGENT))])
    assert rbac.may(AGENT, "create", "authentication.k8s.io", "tokenreviews")
    assert not rbac.may(AGENT, "create", "", "pods")
    assert Rbac([binding("admin", "cluster-admin", sa(*AGENT))]).may(AGENT, "delete", "", "nodes")


def test_power_counts_what_an_aggregated_role_collects():
    """Put-back: RBC-003 read only a role's rendered `rules`, so a grant through aggregation was missed."""
    found = powers(
        docs(
            role("reader", aggregate={"site/aggregate-to-reader": "true"}),
            role("secret-part", [SECRETS], labels={"site/aggregate-to-reader": "true"}),
            binding("agent-reads", "reader", sa(*AGENT)),
        )
    )
    assert [(p.account, p.primitive) for p in found] == [("agents/agent", READS_SECRETS)]


def test_node_rbac_counts_the_authenticated_group_and_aggregation():
    """Put-back: the node-identity rule saw neither `system:authenticated` nor aggregated rules."""
    found = node_rbac.grants(
        docs(
            role("reader", aggregate={"site/aggregate-to-reader": "true"}),
            role("secret-part", [SECRETS], labels={"site/aggregate-to-reader": "true"}),
            binding("everyone-reads", "reader", {"kind": "Group", "name": "system:authenticated"}),
        ),
        [AGENT],
    )
    assert [(g.account, g.capability) for g in found] == [("agents/agent", NODE_READS_SECRETS)]


def test_the_bring_up_and_the_static_rules_read_the_same_rbac():
    """The bring-up's cluster asks the same evaluator (no second reading of RBAC to drift apart)."""
    from sitegen.check.bringup import objects
    from sitegen.check.bringup.refusals import controllers

    assert objects.Rbac is Rbac
    assert controllers.allows is allows
