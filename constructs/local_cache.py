"""The local NVMe cache tier: a TopoLVM StorageClass bound where the pod lands."""

from __future__ import annotations

from cdk8s_plus_27 import k8s

from constructs import Construct

CLASS_NAME = "nvme-cache"
DEVICE_CLASS = "nvme"


class NvmeCacheClass(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        k8s.KubeStorageClass(
            self,
            "Resource",
            metadata=k8s.ObjectMeta(name=CLASS_NAME),
            provisioner="topolvm.io",
            # the volume must be created on the node the pod is scheduled to
            volume_binding_mode="WaitForFirstConsumer",
            reclaim_policy="Delete",
            allow_volume_expansion=True,
            parameters={"topolvm.io/device-class": DEVICE_CLASS, "csi.storage.k8s.io/fstype": "xfs"},
        )
