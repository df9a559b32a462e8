"""RBC-003 and VOL-001: power beyond a namespace is computed from the rendered RBAC, and every account
that holds some is reviewed by its component; the chart roles narrowed by patches stay narrowed."""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePosixPath

import pytest
import yaml

from sitegen.check import validate as validate_module
from sitegen.check.allowlists import allow_lists
from sitegen.check.power import Scope, by_account, powers, primitives
from sitegen.components.privilege import (
    APPROVES_CLIENT_CSRS,
    EQUIVALENT,
    MAKES_PRIVILEGED_PODS,
    MINTS_TOKENS,
    READS_SECRETS,
    REWRITES_ADMISSION,
    Reviewed,
)
from sitegen.tree.documents import Document

from .conftest import DIST, validate

CLUSTER = Scope(None, True)
APPROVE = {
    "apiGroups": ["certificates.k8s.io"],
    "resources": ["certificatesigningrequests/approval"],
    "verbs": ["update"],
}
SIGNERS = {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "verbs": ["approve"]}


def test_csr_approval_counts_only_for_a_signer_whose_certificates_log_in():
    assert APPROVES_CLIENT_CSRS in primitives([APPROVE, SIGNERS], CLUSTER)
    kubelet = {**SIGNERS, "resourceNames": ["kubernetes.io/kubelet-serving"]}
    assert APPROVES_CLIENT_CSRS not in primitives([APPROVE, kubelet], CLUSTER)
    client = {**SIGNERS, "resourceNames": ["kubernetes.io/kube-apiserver-client"]}
    assert APPROVES_CLIENT_CSRS in primitives([APPROVE, client], CLUSTER)


def test_admission_writes_count_unless_named():
    policies = {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingadmissionpolicies"],
        "verbs": ["update", "delete"],
    }
    assert REWRITES_ADMISSION in primitives([policies], CLUSTER)
    assert REWRITES_ADMISSION not in primitives([{**policies, "resourceNames": ["its-own"]}], CLUSTER)
    # a new webhook configuration sees every object it matches: create counts whatever the names
    webhooks = {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["mutatingwebhookconfigurations"],
        "verbs": ["create"],
    }
    assert REWRITES_ADMISSION in primitives([webhooks], CLUSTER)


def test_wildcards_grant_every_primitive_and_a_namespace_only_its_own():
    star = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert set(EQUIVALENT) <= set(primitives(star, CLUSTER))
    tokens = [{"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}]
    assert MINTS_TOKENS in primitives(tokens, CLUSTER)
    assert MINTS_TOKENS not in primitives([{**tokens[0], "resourceNames": ["vault-reader"]}], CLUSTER)
    pods = [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]}]
    assert MAKES_PRIVILEGED_PODS in primitives(pods, Scope("kube-system", True))
    assert MAKES_PRIVILEGED_PODS not in primitives(pods, Scope("tenant", False))


def _doc(kind: str, body: dict, namespace: str | None = None) -> Document:
    body = {
        "kind": kind,
        "metadata": {"name": body.pop("name"), **({"namespace": namespace} if namespace else {})},
        **body,
    }
    return Document(file=PurePosixPath(f"v/apps/c/x/{kind.lower()}.yaml"), index=0, body=body)


def test_a_group_of_service_accounts_is_every_account_of_the_namespace():
    role = _doc(
        "ClusterRole",
        {"name": "r", "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]},
    )
    binding = _doc(
        "ClusterRoleBinding",
        {
            "name": "b",
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "Group", "name": "system:serviceaccounts:ops"}],
        },
    )
    found = by_account(powers([role, binding]))
    assert [p.primitive for p in found["ops/*"]] == [READS_SECRETS]


def test_every_review_is_granted_somewhere(site, docs):
    """A review the rendered RBAC no longer needs is stale: it would let a later grant through."""
    granted: dict[str, set[str]] = {}
    clusters: dict[tuple[str, str], list[Document]] = {}
    for d in docs:
        if d.cluster and not d.is_values and not d.is_host_file:
            clusters.setdefault((d.variant, d.cluster), []).append(d)
    for cluster_docs in clusters.values():
        for p in powers(cluster_docs):
            granted.setdefault(p.account, set()).add(p.primitive)
    reviewed = allow_lists(site).powers
    assert reviewed
    for account, review in reviewed.items():
        assert set(review.primitives) == granted.get(account, set()), account


def _rewrite(path: Path, change) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    change(docs[0])
    path.write_text(yaml.safe_dump_all(docs))


def _unnamed(rule: dict) -> None:
    rule.pop("resourceNames", None)


AI = "one-cluster/apps/ai"


def test_the_narrowed_chart_roles_put_back_are_refused(tree):
    """H1 (any signer), H2 (every admission policy), every account's token, inline CSI volumes."""
    _rewrite(
        tree / f"{AI}/aistor-operator/clusterrole.aistor-certificate-management.yaml",
        lambda d: _unnamed(d["rules"][3]),
    )
    _rewrite(tree / f"{AI}/gpu-operator/clusterrole.gpu-operator.yaml", lambda d: _unnamed(d["rules"][-1]))
    _rewrite(
        tree / f"{AI}/external-secrets/clusterrole.external-secrets-controller.yaml",
        lambda d: _unnamed(d["rules"][8]),
    )
    _rewrite(
        tree / f"{AI}/csi-isilon/csidriver.csi-isilon.dellemc.com.yaml",
        lambda d: d["spec"].update(volumeLifecycleModes=["Persistent", "Ephemeral"]),
    )
    result = validate(tree)
    assert result.exit_code == 1
    out = result.stdout
    assert (
        f"aistor-operator/object-store {APPROVES_CLIENT_CSRS} through ClusterRoleBinding "
        "aistor-object-store-certificate-management" in out
    )
    assert f"gpu-operator/gpu-operator {REWRITES_ADMISSION} through ClusterRoleBinding gpu-operator" in out
    assert f"external-secrets/external-secrets {MINTS_TOKENS}" in out
    assert "CSIDriver csi-isilon.dellemc.com: VOL-001 no-inline-csi" in out
    assert "two-cluster/" not in out  # only what was put back


@pytest.mark.parametrize("account", ["aistor-operator/object-store", "velero/velero-server"])
def test_an_unreviewed_power_is_refused(tree, monkeypatch, account):
    def unreviewed(site):
        found = allow_lists(site)
        return dataclasses.replace(found, powers={k: v for k, v in found.powers.items() if k != account})

    monkeypatch.setattr(validate_module, "allow_lists", unreviewed)
    result = validate(tree)
    assert result.exit_code == 1
    assert f"RBC-003 reviewed-power: $.subjects: {account} {READS_SECRETS}" in result.stdout


def test_a_review_names_only_known_primitives():
    with pytest.raises(ValueError, match="not a primitive"):
        Reviewed(("reads some Secrets",), "why")


def test_the_runbook_lists_every_reviewed_account(site):
    runbook = (DIST / "two-cluster" / "bootstrap" / "RUNBOOK.md").read_text()
    section = runbook.split("## Accounts with power beyond their namespace", 1)[1].split("\n## ", 1)[0]
    for account, review in allow_lists(site).powers.items():
        assert f"| `{account}` |" in section
        assert review.why in section
