"""The reviewed role names a policy lets through are those its cluster renders (security review L5):
on the AIStor spoke, a ClusterRole that takes the name of a hub-only reviewed role (Argo CD's server,
cert-manager's controllers) is refused like any other new reader of every Secret or granter."""

from __future__ import annotations

import pytest

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST

SECRETS_LIST = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
BINDS = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"]}
OPERATOR = Request("system:serviceaccount:aistor-operator:object-store")


@pytest.fixture(scope="module")
def clusters() -> dict[str, dict[str, Policy]]:
    docs = [d for d in load_tree(DIST) if d.variant == "two-cluster"]
    return {
        cluster: {p.name: p for p in denying_policies([d.body for d in docs if d.cluster == cluster])}
        for cluster in ("ai", "aistor")
    }


def _role(name: str, rule: dict) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [rule],
    }


@pytest.mark.parametrize(
    ("policy", "name", "rule"),
    [
        ("sitegen-secret-readers", "argocd-server", SECRETS_LIST),
        ("sitegen-secret-readers", "cert-manager-controller-issuers", SECRETS_LIST),
        ("sitegen-granting-roles", "argocd-application-controller", BINDS),
    ],
)
def test_a_reviewed_name_the_cluster_does_not_render_is_not_reviewed_there(clusters, policy, name, rule):
    body = _role(name, rule)
    hub, spoke = clusters["ai"][policy], clusters["aistor"][policy]
    assert hub.matches(body, None, "CREATE") and spoke.matches(body, None, "CREATE")
    assert hub.refusal(body, OPERATOR) is None  # the hub renders it: reviewed there
    assert spoke.refusal(body, OPERATOR) is not None
    # the spoke's own reviewed roles still pass there
    assert (
        clusters["aistor"]["sitegen-secret-readers"].refusal(_role("argocd-manager", SECRETS_LIST), OPERATOR)
        is None
    )
