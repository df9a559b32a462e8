"""`sitegen-host-access` against the bypasses the security review found (M1): AppArmor turned off is host
access as the Pod Security baseline counts it, and the etcd backups run as an account of their own, so
the namespace's `default` (which any pod there runs as) reaches no host."""

from __future__ import annotations

import pytest

from constructs.objects import reaches_host
from sitegen.check.admission_policy import Policy, Request, admitted_pod, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST

DAEMONS = Request("system:serviceaccount:kube-system:daemon-set-controller")
JOBS = Request("system:serviceaccount:kube-system:job-controller")
UNCONFINED = {"type": "Unconfined"}


@pytest.fixture(scope="module")
def host_access() -> Policy:
    docs = [d.body for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"]
    return {p.name: p for p in denying_policies(docs)}["sitegen-host-access"]


def _pod(namespace: str, account: str | None, **spec) -> dict:
    body = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if account:
        body["serviceAccountName"] = account
    return admitted_pod(namespace, "p", {}, body)


@pytest.mark.parametrize(
    "spec",
    [
        {
            "containers": [
                {"name": "c", "image": "busybox", "securityContext": {"appArmorProfile": UNCONFINED}}
            ]
        },
        {"securityContext": {"appArmorProfile": UNCONFINED}},
        {
            "initContainers": [
                {"name": "i", "image": "busybox", "securityContext": {"appArmorProfile": UNCONFINED}}
            ]
        },
    ],
)
def test_apparmor_turned_off_is_host_access(host_access, spec):
    assert reaches_host(spec)
    refused = host_access.refusal(_pod("kube-system", "debug", **spec), DAEMONS)
    assert refused and "reaches its node" in refused
    confined = {
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
            }
        ]
    }
    assert (
        not reaches_host(confined)
        and host_access.refusal(_pod("kube-system", "debug", **confined), DAEMONS) is None
    )


def test_only_the_etcd_backups_own_account_reaches_the_host_in_their_namespace(host_access, docs):
    jobs = [
        d.body for d in docs
        if d.variant == "one-cluster" and d.kind == "CronJob" and d.namespace == "etcd-backup"
    ]  # fmt: skip
    assert len(jobs) == 3
    pods = [j["spec"]["jobTemplate"]["spec"]["template"]["spec"] for j in jobs]
    assert {p.get("serviceAccountName") for p in pods} == {"etcd-backup"}
    assert all(reaches_host(p) for p in pods)
    for spec in pods:
        assert host_access.refusal(admitted_pod("etcd-backup", "p", {}, spec), JOBS) is None
        as_default = {k: v for k, v in spec.items() if k != "serviceAccountName"}
        refused = host_access.refusal(admitted_pod("etcd-backup", "p", {}, as_default), JOBS)
        assert refused and "reaches its node" in refused
