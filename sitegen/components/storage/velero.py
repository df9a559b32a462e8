"""`velero`: the Velero server (chart) on the system pool of every cluster: non-root, read-only, the AWS
plugin for S3 (AIStor), CSI snapshots on, no node agent (volumes are snapshotted where they live, on
PowerScale, not copied). With it, as the chart's extra objects (they need its CRDs): a
BackupStorageLocation on AIStor (`velero/<cluster>/` of the backup bucket, the AIStor CA by reference)
and a Schedule per namespace class of config: the site's namespaces with the cluster-scoped objects,
and the tenants' namespaces with CSI snapshots of their volumes, skipping (a volume policy) the classes no
snapshot can take; and a second location on the second backup target (its own keys and CA) with one
Schedule of every namespace's objects. Its keys: `velero-config`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from constructs.aistor import DRIVE_CLASS
from constructs.local_cache import CLASS_NAME as LOCAL_CACHE_CLASS
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import EVERYTHING, Reviewed
from sitegen.components.s3 import S3Endpoint
from sitegen.components.second_target import CA_SECRET as SECOND_CA_SECRET
from sitegen.components.second_target import second_endpoint, second_flow
from sitegen.components.storage import PROJECT
from sitegen.components.storage.aistor import CA_SECRET, AIStor
from sitegen.components.values import (
    Image,
    NonRootPod,
    Placed,
    Resources,
    RestrictedContainer,
    Values,
    image,
    placed,
    requests,
)

NAMESPACE = "velero"
PREFIX = "velero"  # its folder of the backup bucket; a folder per cluster below
VELERO_API = "velero.io/v1"
LOCATION = "aistor"
CREDENTIALS = "velero-aistor"  # `cloud`: the AWS plugin's credentials file, from the vault
PLUGINS = "plugins"
VOLUME_POLICY = "volume-policy"


class Mount(Values):
    name: str
    mountPath: str


class PluginContainer(Values):
    """An init container that copies a plugin binary into the server's plugins volume."""

    name: str
    image: str
    securityContext: RestrictedContainer = RestrictedContainer()
    resources: Resources
    volumeMounts: list[Mount]


class EmptyDir(Values):
    pass


class ScratchVolume(Values):
    name: str
    emptyDir: EmptyDir = EmptyDir()


class Credentials(Values):
    useSecret: bool = True
    existingSecret: str = CREDENTIALS


class Configuration(Values):
    features: str = "EnableCSI"  # CSI snapshots (built in since Velero 1.14, still behind the flag)
    backupStorageLocation: list[dict] = []  # velero-config's, which names the AIStor CA Secret
    volumeSnapshotLocation: list[dict] = []  # CSI needs none


class ServiceMonitor(Values):
    enabled: bool = True
    autodetect: bool = False  # rendered offline: the CRD is not discoverable


class Metrics(Values):
    enabled: bool = True
    serviceMonitor: ServiceMonitor = ServiceMonitor()


def _location(
    ctx: ClusterContext, name: str, bucket: str, s3: S3Endpoint, ca_secret: str, credentials: str | None
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
        "config": {"region": s3.region, "s3ForcePathStyle": "true", "s3Url": s3.url},
    }
    if credentials is not None:
        spec["credential"] = {"name": credentials, "key": "cloud"}
    return {
        "apiVersion": VELERO_API,
        "kind": "BackupStorageLocation",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def _locations(ctx: ClusterContext) -> list[dict[str, Any]]:
    backups = ctx.site.services.backups
    return [
        _location(ctx, LOCATION, backups.bucket, AIStor.s3_endpoint(ctx.site, ctx.cluster), CA_SECRET, None),
        _location(ctx, backups.second.name, backups.second.bucket_of(PREFIX), second_endpoint(ctx.site),
                  SECOND_CA_SECRET, second_credentials(ctx)),
    ]  # fmt: skip


def second_credentials(ctx: ClusterContext) -> str:
    return f"velero-{ctx.site.services.backups.second.name}"


def namespace_classes(ctx: ClusterContext) -> dict[str, list[str]]:
    """The site's namespaces (platform) and the tenants' (a tenant's namespace is its name) of the cluster."""
    site = ctx.site_namespaces()
    tenants = [ns for ns in site if ns in ctx.site.tenants]
    return {"platform": [ns for ns in site if ns not in tenants], "tenants": tenants}


def _volume_policy() -> dict[str, Any]:
    policy = {
        "version": "v1",
        "volumePolicies": [
            {"conditions": {"storageClass": list(Velero.unsnapshotted_classes)}, "action": {"type": "skip"}}
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


def _schedules(ctx: ClusterContext) -> list[dict[str, Any]]:
    velero = ctx.site.services.backups.velero
    configured = {"platform": velero.platform, "tenants": velero.tenants}
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


class VeleroValues(Placed):
    image: Image
    # Helm hooks Argo CD would not run as Helm does: the CRDs come from the rendered chart
    upgradeCRDs: bool = False
    cleanUpCRDs: bool = False
    initContainers: list[PluginContainer]
    podSecurityContext: NonRootPod = NonRootPod()
    containerSecurityContext: RestrictedContainer = RestrictedContainer()
    resources: Resources
    extraVolumes: list[ScratchVolume] = [ScratchVolume(name="udmrepo")]  # read-only root: its repo cache
    extraVolumeMounts: list[Mount] = [Mount(name="udmrepo", mountPath="/udmrepo")]
    credentials: Credentials = Credentials()
    backupsEnabled: bool = False
    snapshotsEnabled: bool = False
    deployNodeAgent: bool = False
    configuration: Configuration = Configuration()
    metrics: Metrics = Metrics()
    extraObjects: list[dict[str, Any]]


class Velero(ChartComponent):
    name = "velero"
    chart = "velero"
    serves = ("velero.io/v1", "velero.io/v2alpha1")
    project = PROJECT
    layer = Layer.SERVICES  # after its keys (velero-config) and AIStor
    # Volumes no CSI snapshot can take, skipped by the tenants' backups instead of failing them (BAK-003),
    # and why they need none (`plan` says it).
    unsnapshotted_classes = {
        LOCAL_CACHE_CLASS: "TopoLVM's thick node-local volumes take no snapshot; a model cache comes back from its source",
        DRIVE_CLASS: "AIStor's DirectPV drives, protected by its erasure coding",
    }
    after = (Cilium, Namespaces, KubePrometheusStack)  # its ServiceMonitor
    namespace = NAMESPACE
    security = NamespaceSecurity("restricted", "the server runs restricted (non-root, read-only)")
    images = {"velero": "the backup server", "velero-plugin-for-aws": "S3 (AIStor) for Velero"}

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(AIStor, (), "backups to AIStor (S3)"),
            second_flow(ctx.site, "backups to the second target (S3)"),
        ]

    def values(self, ctx: ClusterContext) -> VeleroValues:
        plugin = ctx.image("velero-plugin-for-aws")
        return VeleroValues(
            image=image(ctx.image("velero")),
            initContainers=[
                PluginContainer(
                    name="velero-plugin-for-aws",
                    image=plugin.ref,
                    resources=requests("10m", "32Mi", "128Mi"),
                    volumeMounts=[Mount(name=PLUGINS, mountPath="/target")],
                )
            ],
            resources=requests("100m", "256Mi", "1Gi"),
            extraObjects=[*_locations(ctx), _volume_policy(), *_schedules(ctx)],
            **placed(ctx.system_placement),
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/velero-server": Reviewed(
                EVERYTHING,
                "restores any object of a backup, of any kind, into any namespace: the chart binds it to cluster-admin",
            ),
        }
