"""What a component does in S3 (`Component.s3_access`, `second_copy`): its AIStor or second-target
user, the buckets and prefixes it may use, and the policy of its key; and where an S3 API answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# What a consumer may do under its prefix: everything on its objects, or only put them (a backup that
# must not read, overwrite-protect or delete what it wrote: expiry is the bucket's lifecycle rule).
_OBJECT_ACTIONS = {
    "read-write": (
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
    ),
    "write-only": ("s3:PutObject", "s3:AbortMultipartUpload"),
}
_BUCKET_ACTIONS = {
    "read-write": ("s3:GetBucketLocation", "s3:ListBucketMultipartUploads"),
    "write-only": ("s3:GetBucketLocation",),
}


@dataclass(frozen=True)
class S3Endpoint:
    """Where a consumer reaches an S3 API (over TLS), and the region its clients sign requests with."""

    host: str
    region: str

    @property
    def url(self) -> str:
        return f"https://{self.host}"


@dataclass(frozen=True)
class S3Grant:
    """Objects of a bucket under a prefix ("" for the whole bucket), and what the consumer may do there."""

    bucket: str
    prefix: str = ""
    access: Literal["read-write", "write-only"] = "read-write"


@dataclass(frozen=True)
class BucketRules:
    """What a consumer's bucket keeps and how much: a hard quota (decimal TB), versions of deleted and
    overwritten objects kept `keep_days`, every object expiring `expire_days` after it was written."""

    bucket: str
    quota_tb: int | None = None
    versioning: bool = False
    keep_days: int | None = None
    expire_days: int | None = None


@dataclass(frozen=True)
class S3Access:
    """An S3 consumer: its AIStor user and what it may do where (the runbook creates the buckets and a
    key of the user's own, limited by `policy()`; no consumer gets the root's rights)."""

    user: str
    grants: tuple[S3Grant, ...]
    # lifecycle rules of the first bucket: objects under the prefix expire after the days
    expire: tuple[tuple[str, int], ...] = ()
    target: str = "aistor"  # or the second backup target's name
    rules: tuple[BucketRules, ...] = ()  # of buckets the consumer owns alone

    def __post_init__(self) -> None:
        if not self.grants:
            raise ValueError(f"S3 consumer {self.user} has no grant: its key would be refused everything")

    @property
    def buckets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.bucket for g in self.grants))

    @property
    def vault_key(self) -> str:
        return s3_vault_key(self.user, self.target)

    def policy(self) -> dict[str, Any]:
        """The IAM policy of the consumer's key (AWS's syntax, which AIStor takes): its objects, its
        bucket's listing limited to its prefix, nothing else (no bucket or admin action, no
        s3:BypassGovernanceRetention: a locked object stays locked for every key but the root)."""
        statements: list[dict[str, Any]] = []
        versioned = {r.bucket for r in self.rules if r.versioning}
        for g in self.grants:
            bucket = f"arn:aws:s3:::{g.bucket}"
            statements.append(
                {
                    "Effect": "Allow",
                    "Action": list(_OBJECT_ACTIONS[g.access]),
                    "Resource": [f"{bucket}/{g.prefix}*"],
                }
            )
            statements.append(
                {"Effect": "Allow", "Action": list(_BUCKET_ACTIONS[g.access]), "Resource": [bucket]}
            )
            if g.bucket in versioned and g.access == "read-write":
                # earlier versions read back (a checkpoint overwritten by mistake), never deleted for good
                statements.append(
                    {
                        "Effect": "Allow",
                        "Action": ["s3:GetObjectVersion"],
                        "Resource": [f"{bucket}/{g.prefix}*"],
                    }
                )
                statements.append(
                    {"Effect": "Allow", "Action": ["s3:ListBucketVersions"], "Resource": [bucket]}
                )
            if g.access == "read-write":
                listing: dict[str, Any] = {
                    "Effect": "Allow",
                    "Action": ["s3:ListBucket"],
                    "Resource": [bucket],
                }
                if g.prefix:
                    listing["Condition"] = {"StringLike": {"s3:prefix": [f"{g.prefix}*"]}}
                statements.append(listing)
        return {"Version": "2012-10-17", "Statement": statements}


def s3_vault_key(user: str, target: str = "aistor") -> str:
    """Where the runbook stores an S3 consumer's key: of AIStor once the ObjectStore runs, or of the
    second backup target (named `target`)."""
    return f"aistor/users/{user}" if target == "aistor" else f"{backup_target_folder(target)}/users/{user}"


def backup_target_folder(target: str) -> str:
    """The vault folder of the second backup target's keys and CA."""
    return f"backups/{target}"
