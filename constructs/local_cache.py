"""Local NVMe volumes (TopoLVM): the cache tier of GPU jobs and the volumes of platform services."""

from __future__ import annotations

from cdk8s_plus_27 import k8s

from constructs import Construct

CLASS_NAME = "local-nvme"
DEVICE_CLASS = "nvme"


class LocalNvmeClass(Construct):
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
