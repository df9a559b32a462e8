"""Velero's own objects, rendered through its chart's `extraObjects` (they need the chart's CRDs): a
BackupStorageLocation on AIStor (`velero/<cluster>/` of the backup bucket, the AIStor CA by reference)
and one on the second backup target (its own keys and CA); a Schedule per namespace class of config (the
site's namespaces with the cluster-scoped objects, the tenants' with CSI snapshots of their volumes,
skipping by a volume policy the classes no snapshot can take), and one of every namespace's objects to
the second target."""

from __future__ import annotations

from typing import Any

import yaml

from constructs.aistor import DRIVE_CLASS
from constructs.local_cache import CLASS_NAME as LOCAL_CACHE_CLASS
from sitegen.components.context import ClusterContext
from sitegen.components.s3 import S3Endpoint
from sitegen.components.second_target import CA_SECRET as SECOND_CA_SECRET
from sitegen.components.second_target import second_endpoint
from sitegen.components.storage.aistor import CA_SECRET, AIStor
from sitegen.model import Site
from sitegen.model.services import BackupSchedule

NAMESPACE = "velero"
PREFIX = "velero"  # its folder of the backup bucket; a folder per cluster below
VELERO_API = "velero.io/v1"
LOCATION = "aistor"
CREDENTIALS = "velero-aistor"  # `cloud`: the AWS plugin's credentials file, from the vault
VOLUME_POLICY = "volume-policy"
# Volumes no CSI snapshot can take, skipped by the tenants' backups instead of failing them (BAK-003),
# and why they need none (`plan` says it).
UNSNAPSHOTTED_CLASSES = {
    LOCAL_CACHE_CLASS: "TopoLVM's thick node-local volumes take no snapshot; a model cache comes back from its source",
    DRIVE_CLASS: "AIStor's DirectPV drives, protected by its erasure coding",
}


def extra_objects(ctx: ClusterContext) -> list[dict[str, Any]]:
    return [*locations(ctx), volume_policy(), *schedules(ctx)]


# The AWS plugin signs every upload with a CRC32 checksum by default, sent as aws-chunked trailers that
# many S3 stores outside AWS and MinIO refuse (XAmzContentSHA256Mismatch, NotImplemented) or, worse,
# store as part of the object (velero#9951). The second target is such a store for all we know: no
# checksum there (TLS still guards the transfer), and a plugin that honours "" (v1.14.3, plugin #313).
NO_CHECKSUM = {"checksumAlgorithm": ""}


def _location(
    ctx: ClusterContext,
    name: str,
    bucket: str,
    s3: S3Endpoint,
    ca_secret: str,
    credentials: str | None,
    checksum: bool = True,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "provider": "aws",
        "default": credentials is None,  # AIStor's; the second target's names its own keys
        "accessMode": "ReadWrite",
        "objectStorage": {
            "bucket": bucket,
            "prefix": f"{PREFIX}/{ctx.cluster.name}",
            "caCertRef": {"name": ca_secret, "key": "ca.crt"},  # the chart's caCert would be base64 in git
        },
        "config": {
            "region": s3.region,
            "s3ForcePathStyle": "true",
            "s3Url": s3.url,
            **({} if checksum else NO_CHECKSUM),
        },
    }
    if credentials is not None:
        spec["credential"] = {"name": credentials, "key": "cloud"}
    return {
        "apiVersion": VELERO_API,
        "kind": "BackupStorageLocation",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def locations(ctx: ClusterContext) -> list[dict[str, Any]]:
    backups = ctx.site.services.backups
    return [
        _location(ctx, LOCATION, backups.bucket, AIStor.s3_endpoint(ctx.site, ctx.cluster), CA_SECRET, None),
        _location(ctx, backups.second.name, backups.second.bucket_of(PREFIX), second_endpoint(ctx.site),
                  SECOND_CA_SECRET, second_credentials(ctx), checksum=False),
    ]  # fmt: skip


def second_credentials(ctx: ClusterContext) -> str:
    return f"velero-{ctx.site.services.backups.second.name}"


def namespace_classes(ctx: ClusterContext) -> dict[str, list[str]]:
    """The site's namespaces (platform) and the tenants' (a tenant's namespace is its name) of the cluster."""
    site = ctx.site_namespaces()
    tenants = [ns for ns in site if ns in ctx.site.tenants]
    return {"platform": [ns for ns in site if ns not in tenants], "tenants": tenants}


def volume_policy() -> dict[str, Any]:
    policy = {
        "version": "v1",
        "volumePolicies": [
            {"conditions": {"storageClass": list(UNSNAPSHOTTED_CLASSES)}, "action": {"type": "skip"}}
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": VOLUME_POLICY, "namespace": NAMESPACE},
        "data": {"policy.yaml": yaml.safe_dump(policy, sort_keys=False)},
    }


def _schedule(name: str, cron: str, template: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": VELERO_API,
        "kind": "Schedule",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedule": cron, "useOwnerReferencesInBackup": False, "template": template},
    }


def _second_schedule(ctx: ClusterContext) -> dict[str, Any]:
    """Every namespace's objects and the cluster-scoped ones, on the second target: what rebuilds the
    cluster's state if AIStor is lost. No volume data: copying it needs Velero's data mover (its node
    agent), not deployed; tenant volumes keep their CSI snapshots on PowerScale."""
    second = ctx.site.services.backups.second
    namespaces = [ns for names in namespace_classes(ctx).values() for ns in names]
    return _schedule(
        second.name,
        second.velero.schedule,
        {
            "ttl": f"{second.velero.retention_days * 24}h0m0s",
            "includedNamespaces": namespaces,
            "storageLocation": second.name,
            "excludedResources": ["secrets"],
            "snapshotVolumes": False,
            "includeClusterResources": True,
        },
    )


def configured_schedules(site: Site) -> dict[str, BackupSchedule]:
    """Each Schedule's name and its config: one per namespace class, and the second target's."""
    backups = site.services.backups
    return {
        "platform": backups.velero.platform,
        "tenants": backups.velero.tenants,
        backups.second.name: backups.second.velero,
    }


def schedules(ctx: ClusterContext) -> list[dict[str, Any]]:
    configured = configured_schedules(ctx.site)
    out = []
    for name, namespaces in namespace_classes(ctx).items():
        if not namespaces:
            continue
        schedule = configured[name]
        template = {
            "ttl": f"{schedule.retention_days * 24}h0m0s",
            "includedNamespaces": namespaces,
            "storageLocation": LOCATION,
            # Secrets come back from the vault through External Secrets: no copy of them in S3
            "excludedResources": ["secrets"],
            # tenants' data: a CSI snapshot of each volume; the platform's state is its objects (its
            # volumes are caches and rebuildable, its secrets come back from the vault)
            "snapshotVolumes": name == "tenants",
            "includeClusterResources": name == "platform",
        }
        if name == "tenants":
            template["resourcePolicy"] = {"kind": "configmap", "name": VOLUME_POLICY}
        out.append(_schedule(name, schedule.schedule, template))
    return [*out, _second_schedule(ctx)]
