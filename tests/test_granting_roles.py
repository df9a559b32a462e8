"""The RBAC admission policies against the bypasses the security review found (M1): `*` verbs on the
resources impersonation acts on imply `impersonate`, and a ClusterRole with an aggregation rule takes
whatever rules its labels gather, which no review of the role sees (`sitegen-granting-roles`); a
binding of cluster-admin is reviewed as a binding (kind, namespace, name), not by its name, and so are
the built-ins as strong; admin and edit are not bound in kube-system (`sitegen-cluster-admin-bindings`)."""

from __future__ import annotations

import pytest

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST

ARGO = Request("system:serviceaccount:argocd:argocd-application-controller")


def _policies(variant: str, cluster: str) -> dict[str, Policy]:
    docs = [d.body for d in load_tree(DIST) if d.variant == variant and d.cluster == cluster]
    return {p.name: p for p in denying_policies(docs)}


@pytest.fixture(scope="module")
def granting() -> Policy:
    return _policies("one-cluster", "ai")["sitegen-granting-roles"]


def _role(name: str, *rules: dict, **extra) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": list(rules),
        **extra,
    }


@pytest.mark.parametrize(
    ("rule", "admitted"),
    [
        ({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["*"]}, False),
        ({"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["*"]}, False),
        ({"apiGroups": [""], "resources": ["*"], "verbs": ["*"]}, False),
        ({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "verbs": ["*"]}, False),
        ({"apiGroups": ["*"], "resources": ["uids"], "verbs": ["*"]}, False),
        # `*` on what impersonation does not act on grants nothing beyond itself
        ({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}, True),
        ({"apiGroups": ["kueue.x-k8s.io"], "resources": ["*"], "verbs": ["*"]}, True),
        ({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get", "list"]}, True),
    ],
)
def test_every_verb_on_whom_one_may_impersonate_is_impersonation(granting, rule, admitted):
    assert (granting.refusal(_role("sneaky", rule), ARGO) is None) is admitted


def test_an_aggregated_role_is_a_reviewed_one(granting):
    gathers_admin = {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]
    }
    refused = granting.refusal(_role("sneaky", aggregationRule=gathers_admin), ARGO)
    assert refused and "aggregates other roles' rules" in refused
    assert granting.refusal({**_role("sneaky", aggregationRule=gathers_admin), "rules": None}, ARGO)
    kueue = {"clusterRoleSelectors": [{"matchLabels": {"rbac.kueue.x-k8s.io/batch-admin": "true"}}]}
    assert granting.refusal(_role("kueue-batch-admin-role", aggregationRule=kueue), ARGO) is None


def test_a_reviewed_aggregate_is_reviewed_only_where_its_app_renders_it():
    """The AIStor spoke runs no Kueue: its policy does not take Kueue's aggregate's name."""
    spoke = _policies("two-cluster", "aistor")["sitegen-granting-roles"]
    kueue = {"clusterRoleSelectors": [{"matchLabels": {"rbac.kueue.x-k8s.io/batch-admin": "true"}}]}
    assert spoke.refusal(_role("kueue-batch-admin-role", aggregationRule=kueue), ARGO)


def _binding(
    kind: str,
    name: str,
    role: str,
    namespace: str = "",
    subject: tuple[str, str] = ("velero", "velero-server"),
) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "namespace": subject[0], "name": subject[1]}],
    }


@pytest.mark.parametrize(
    ("body", "admitted"),
    [
        (_binding("ClusterRoleBinding", "velero-server", "cluster-admin"), True),  # as Git holds it
        # the reviewed name, in another kind or namespace: reviewed is the binding, not its name
        (_binding("RoleBinding", "velero-server", "cluster-admin", "ai-research"), False),
        # built-ins as strong as cluster-admin: escalate any ClusterRole, mint any account's token
        (
            _binding(
                "ClusterRoleBinding",
                "x",
                "system:controller:clusterrole-aggregation-controller",
                subject=("ai-research", "default"),
            ),
            False,
        ),
        (
            _binding(
                "ClusterRoleBinding",
                "x",
                "system:kube-controller-manager",
                subject=("ai-research", "default"),
            ),
            False,
        ),
        # admin or edit where Pod Security does not look
        (_binding("RoleBinding", "x", "admin", "kube-system", ("ai-research", "default")), False),
        (_binding("RoleBinding", "x", "edit", "kube-system", ("ai-research", "default")), False),
        (_binding("RoleBinding", "x", "edit", "ai-research", ("ai-research", "default")), True),
        (_binding("RoleBinding", "x", "view", "kube-system", ("ai-research", "default")), True),
    ],
)
def test_a_binding_as_strong_as_cluster_admin_is_a_reviewed_one(body, admitted):
    bindings = _policies("one-cluster", "ai")["sitegen-cluster-admin-bindings"]
    assert bindings.matches(body, {}, "CREATE")
    assert (bindings.refusal(body, ARGO) is None) is admitted
