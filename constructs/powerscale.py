"""PowerScale through Dell's CSI driver: its credentials by reference and one StorageClass per use.

Every StorageClass parameter comes from config: cluster name, access zone, base path, SmartConnect
name, root squash and the NFS version.
"""

from __future__ import annotations

from cdk8s_plus_27 import k8s

from constructs import Construct
from constructs.objects import SKIP_DRY_RUN, api_object
from constructs.secrets import VaultSecret
from sitegen.model import PowerScale

PROVISIONER = "csi-isilon.dellemc.com"
ONEFS_API_PORT = 8080  # the OneFS Platform API's HTTPS port: the driver's `endpointPort`


def class_name(use: str) -> str:
    return f"powerscale-{use}"


class PowerScaleAccess(Construct):
    """`<release>-creds` and `<release>-certs-0`: the two Secrets the chart mounts, from the vault."""

    def __init__(
        self, scope: Construct, id: str, *, powerscale: PowerScale, release: str, namespace: str, store: str
    ) -> None:
        super().__init__(scope, id)
        entry = (
            "isilonClusters:\n"
            f"  - clusterName: {powerscale.cluster_name}\n"
            '    username: "{{ .username }}"\n'
            '    password: "{{ .password }}"\n'
            f"    endpoint: {powerscale.endpoint}\n"
            f"    endpointPort: {ONEFS_API_PORT}\n"
            "    isDefault: true\n"
            "    skipCertificateValidation: false\n"
            f"    isiPath: {powerscale.base_path}\n"
        )
        VaultSecret(
            self,
            "Credentials",
            name=f"{release}-creds",
            namespace=namespace,
            store=store,
            key="powerscale/csi",
            properties=["username", "password"],
            template={"config": entry},
        )
        VaultSecret(
            self,
            "Certificates",
            name=f"{release}-certs-0",
            namespace=namespace,
            store=store,
            key="powerscale/ca",
            properties=["ca"],
            template={"cert-0": "{{ .ca }}"},
        )


class PowerScaleClasses(Construct):
    def __init__(self, scope: Construct, id: str, *, powerscale: PowerScale) -> None:
        super().__init__(scope, id)
        for use, cls in powerscale.classes.items():
            k8s.KubeStorageClass(
                self,
                use,
                metadata=k8s.ObjectMeta(name=class_name(use), annotations={"description": cls.description}),
                provisioner=PROVISIONER,
                reclaim_policy=cls.reclaim,
                allow_volume_expansion=True,
                volume_binding_mode="Immediate",
                mount_options=[f"vers={powerscale.nfs_version}"],
                parameters={
                    "ClusterName": powerscale.cluster_name,
                    "AccessZone": powerscale.access_zone,
                    "IsiPath": f"{powerscale.base_path}/{cls.path}",
                    "AzServiceIP": powerscale.smartconnect,
                    # root squash on means clients are *not* OneFS root clients
                    "RootClientEnabled": "false" if cls.root_squash else "true",
                },
            )


class PowerScaleSnapshots(Construct):
    """Snapshots of PowerScale volumes (OneFS snapshots); needs the cluster's snapshot controller and CRDs."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        metadata = {
            "name": "powerscale",
            "annotations": SKIP_DRY_RUN,
            # the class Velero's CSI snapshots of these volumes use
            "labels": {"velero.io/csi-volumesnapshot-class": "true"},
        }
        api_object(
            self,
            "Resource",
            "snapshot.storage.k8s.io/v1",
            "VolumeSnapshotClass",
            metadata,
            driver=PROVISIONER,
            deletionPolicy="Delete",
        )
