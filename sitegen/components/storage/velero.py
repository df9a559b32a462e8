"""`velero`: the Velero server (chart) on the system pool of every cluster: non-root, read-only, the AWS
plugin for S3 (AIStor), CSI snapshots on, no node agent (volumes are snapshotted where they live, on
PowerScale, not copied). Its locations and Schedules go with it as the chart's extra objects
(`velero_objects`); its keys: `velero-config`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs.site_watches import BackupWatch, Watch
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import EVERYTHING, GRANTS_ANY_ROLE, Reviewed, RoleReview
from sitegen.components.second_target import second_flow
from sitegen.components.storage import PROJECT
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.velero_objects import (
    CREDENTIALS,
    NAMESPACE,
    UNSNAPSHOTTED_CLASSES,
    configured_schedules,
    extra_objects,
)
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

PLUGINS = "plugins"


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
    unsnapshotted_classes = UNSNAPSHOTTED_CLASSES
    after = (Cilium, Namespaces, KubePrometheusStack)  # its ServiceMonitor
    namespace = NAMESPACE
    security = NamespaceSecurity("restricted", "the server runs restricted (non-root, read-only)")
    images = {"velero": "the backup server", "velero-plugin-for-aws": "S3 (AIStor) for Velero"}

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(AIStor, (), "backups to AIStor (S3)"),
            second_flow(ctx.site, "backups to the second target (S3)"),
        ]

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        return [
            OperatorStep(Stage.DAY_2_BACKUPS, "Velero: restore, and the monthly drill", _day2_section(scope))
        ]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [
            BackupWatch("velero", name, f"Velero's {name} backup", schedule.longest_gap_seconds)
            for name, schedule in configured_schedules(scope.site).items()
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
            extraObjects=extra_objects(ctx),
            **placed(ctx.system_placement),
        )

    def admin_bindings(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            "velero-server": "Velero restores any kind into any namespace; its chart binds cluster-admin "
            "(the RUNBOOK says the spoke credential is cluster-admin strength because of it)"
        }

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "velero-server": RoleReview(
                (GRANTS_ANY_ROLE,), "Velero's Role in its own namespace (the chart grants '*' there)"
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/velero-server": Reviewed(
                EVERYTHING,
                "restores any object of a backup, of any kind, into any namespace: the chart binds it to cluster-admin",
            ),
        }


def _day2_section(scope: ClusterScope) -> str:
    """A restore, and the monthly drill of one (one section for every cluster of the variant)."""
    backups = scope.site.services.backups
    tenant = next(iter(scope.site.tenants), None)
    drill = tenant or "<namespace>"
    return f"""
Velero backs up every cluster into `s3://{backups.bucket}/velero/<cluster>/`: the site's namespaces with
the cluster-scoped objects (`platform`, kept {backups.velero.platform.retention_days} days) and the tenants'
namespaces with CSI snapshots of their PowerScale volumes (`tenants`, kept
{backups.velero.tenants.retention_days} days). Snapshots stay on PowerScale: they undo deletion and
corruption, not the loss of the array. Secrets come back from the vault (External Secrets), not from
backups.

Once a month, restore the newest tenant backup into a scratch namespace, check it, and remove it:

```sh
velero backup get --selector velero.io/schedule-name=tenants
velero restore create drill-$(date +%Y%m) --from-schedule tenants --include-namespaces {drill} \\
  --namespace-mappings {drill}:{drill}-drill --wait
velero restore describe drill-$(date +%Y%m) --details   # Completed, no errors; volumes from snapshots
kubectl delete namespace {drill}-drill
```

A real restore is the same without `--namespace-mappings`, after the namespace is gone; a whole cluster
is rebuilt from git (the bring-up above), then its tenants restored from the newest `tenants` backup.
"""
