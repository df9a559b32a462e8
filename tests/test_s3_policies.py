"""Least privilege for object storage: each S3 consumer's key carries a policy of its own (attached by
the runbook when it creates the key), tested against what the consumer does and what it must not."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase

import pytest

from .bringup_cases import ONE, blocked, run, runbook_without
from .conftest import DIST

POLICIES = DIST / "one-cluster/bootstrap/s3-policies"


def allowed(policy: dict, action: str, resource: str, prefix: str | None = None) -> bool:
    """AWS IAM's evaluation for Allow statements (no Deny is used): action and resource globs, and the
    s3:prefix condition of a listing."""
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        if not any(fnmatchcase(action, a) for a in statement["Action"]):
            continue
        if not any(fnmatchcase(resource, r) for r in statement["Resource"]):
            continue
        like = (statement.get("Condition") or {}).get("StringLike", {}).get("s3:prefix")
        if like is not None and (prefix is None or not any(fnmatchcase(prefix, p) for p in like)):
            continue
        return True
    return False


def policy(user: str) -> dict:
    return json.loads((POLICIES / f"{user}.json").read_text())


# (user, action, resource, listing prefix, allowed): what each consumer does, and what it must not
CASES = [
    (
        "etcd-backup",
        "s3:PutObject",
        "arn:aws:s3:::site-backups/etcd/ai/etcd-cp01-20261203T0600.db",
        None,
        True,
    ),
    (
        "etcd-backup",
        "s3:GetObject",
        "arn:aws:s3:::site-backups/etcd/ai/etcd-cp01-20261203T0600.db",
        None,
        False,
    ),
    (
        "etcd-backup",
        "s3:DeleteObject",
        "arn:aws:s3:::site-backups/etcd/ai/etcd-cp01-20261203T0600.db",
        None,
        False,
    ),
    ("etcd-backup", "s3:PutObject", "arn:aws:s3:::site-backups/velero/ai/backups/x", None, False),
    (
        "velero",
        "s3:PutObject",
        "arn:aws:s3:::site-backups/velero/ai/backups/daily/velero-backup.json",
        None,
        True,
    ),
    (
        "velero",
        "s3:GetObject",
        "arn:aws:s3:::site-backups/velero/ai/backups/daily/velero-backup.json",
        None,
        True,
    ),
    (
        "velero",
        "s3:DeleteObject",
        "arn:aws:s3:::site-backups/velero/ai/backups/daily/velero-backup.json",
        None,
        True,
    ),
    ("velero", "s3:ListBucket", "arn:aws:s3:::site-backups", "velero/ai/backups/", True),
    ("velero", "s3:ListBucket", "arn:aws:s3:::site-backups", "etcd/", False),
    ("velero", "s3:GetObject", "arn:aws:s3:::site-backups/etcd/ai/etcd-cp01-20261203T0600.db", None, False),
    ("loki", "s3:PutObject", "arn:aws:s3:::loki-chunks/fake/abc", None, True),
    ("loki", "s3:GetObject", "arn:aws:s3:::loki-ruler/rules/x", None, True),
    ("loki", "s3:PutObject", "arn:aws:s3:::harbor-registry/docker/registry/v2/blobs/x", None, False),
    ("harbor", "s3:PutObject", "arn:aws:s3:::harbor-registry/docker/registry/v2/blobs/x", None, True),
    ("harbor", "s3:DeleteObject", "arn:aws:s3:::harbor-registry/docker/registry/v2/blobs/x", None, True),
    ("harbor", "s3:GetObject", "arn:aws:s3:::site-backups/etcd/ai/etcd-cp01-20261203T0600.db", None, False),
]


@pytest.mark.parametrize(("user", "action", "resource", "prefix", "expected"), CASES)
def test_each_key_does_its_consumers_work_and_nothing_else(user, action, resource, prefix, expected):
    assert allowed(policy(user), action, resource, prefix) is expected


@pytest.mark.parametrize("user", ["etcd-backup", "velero", "loki", "harbor"])
def test_no_key_lifts_a_lock_or_administers(user):
    for action in (
        "s3:BypassGovernanceRetention",
        "s3:PutObjectRetention",
        "s3:PutBucketPolicy",
        "admin:CreateUser",
    ):
        for resource in ("arn:aws:s3:::site-backups", "arn:aws:s3:::site-backups/velero/x"):
            assert not allowed(policy(user), action, resource), (user, action)


def test_a_key_created_without_its_policy_is_a_blocker(site, inputs):
    texts = runbook_without(inputs, ONE, r" --policy dist/one-cluster/bootstrap/s3-policies/loki\.json")
    blocked(run(site, inputs, ONE, texts=texts), "S3 key loki", "created without --policy")


def test_every_consumer_has_a_policy_file(site):
    from sitegen.components.s3 import S3Access

    with pytest.raises(ValueError, match="has no grant"):
        S3Access("nobody", ())
    assert sorted(p.stem for p in POLICIES.glob("*.json")) == [
        "etcd-backup",
        "grafana-database",
        "harbor",
        "harbor-database",
        "loki",
        "tenant-ai-research",
        "velero",
    ]
