"""The namespace confinement policy: what the other policies, Pod Security and PodTolerationRestriction
read of a namespace is set by Git only."""

from __future__ import annotations

import copy

import pytest

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST
from .test_admission_policies import ARGO, KUBEADM

pytestmark = pytest.mark.tree_variants("one-cluster")


@pytest.fixture(scope="module")
def confinement() -> Policy:
    docs = [d.body for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"]
    (policy,) = [p for p in denying_policies(docs) if p.name == "sitegen-namespace-confinement"]
    return policy


def _relabelled(namespace: dict, labels: dict | None = None, annotations: dict | None = None) -> dict:
    meta = copy.deepcopy(namespace["metadata"])
    meta["labels"] = {k: v for k, v in {**meta.get("labels", {}), **(labels or {})}.items() if v is not None}
    changed = {**meta.get("annotations", {}), **(annotations or {})}
    meta["annotations"] = {k: v for k, v in changed.items() if v is not None}
    return {**namespace, "metadata": meta}


def test_only_git_sets_what_confines_a_namespace(confinement):
    """Pod Security levels, Kueue's management and a tenant's priority (labels the other policies
    select by) and the tolerations whitelist: an operator or Argo CD's API server that may update
    namespaces could otherwise lift a tenant's confinement."""
    tenant = next(d.body for d in load_tree(DIST) if d.kind == "Namespace" and d.name == "ai-research")
    assert confinement.matches(tenant, None, "UPDATE")
    someone = Request("system:serviceaccount:argocd:argocd-server", operation="UPDATE")
    for change in (
        _relabelled(tenant, labels={"sitegen.io/kueue-managed": None}),  # out of Kueue's policies
        _relabelled(tenant, labels={"pod-security.kubernetes.io/enforce": "privileged"}),
        _relabelled(tenant, labels={"sitegen.io/tenant-priority": "high"}),
        _relabelled(tenant, annotations={"scheduler.alpha.kubernetes.io/tolerationsWhitelist": "[]"}),
    ):
        refused = confinement.refusal(change, someone, old=tenant)
        assert refused and "come from Git only" in refused
        assert confinement.refusal(change, ARGO, old=tenant) is None  # Git's change
    assert confinement.refusal(_relabelled(tenant, labels={"team": "nlp"}), someone, old=tenant) is None
    assert confinement.refusal(tenant, someone, old=tenant) is None  # a status or finalizer update
    create = Request("system:serviceaccount:gpu-operator:gpu-operator")
    privileged = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    assert confinement.refusal(privileged, create) is None
    assert confinement.refusal(
        _relabelled(privileged, labels={"pod-security.kubernetes.io/enforce": "privileged"}), create
    )
    assert (
        confinement.refusal(
            _relabelled(tenant, labels={"sitegen.io/kueue-managed": None}), KUBEADM, old=tenant
        )
        is None
    )
