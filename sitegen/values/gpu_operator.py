"""NVIDIA GPU Operator: operands on the GPU pool only, the B300 driver branch, DMA-BUF GPUDirect RDMA."""

from __future__ import annotations

from typing import Any

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests

RUNTIME_CLASS = "nvidia"  # created by the operator; GPU workloads name it
# The operator labels every node with an NVIDIA PCI device; its operands select on these labels.
GPU_PRESENT = {"nvidia.com/gpu.present": "true"}
# What `daemonsets.tolerations` replaces: the operator's own default toleration.
DEFAULT_OPERAND_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


class GpuOperatorValues(Values):
    nfd: dict[str, bool] = {"enabled": False}  # the cluster's single NFD is its own app
    operator: dict[str, Any]
    cdi: dict[str, bool] = {"enabled": True}
    daemonsets: dict[str, Any]
    driver: dict[str, Any]
    toolkit: dict[str, bool] = {"enabled": True}
    devicePlugin: dict[str, bool] = {"enabled": True}
    gfd: dict[str, bool] = {"enabled": True}
    dcgm: dict[str, bool] = {"enabled": False}  # the exporter embeds its own host engine
    dcgmExporter: dict[str, Any] = {"enabled": True, "serviceMonitor": {"enabled": True}}
    gdrcopy: dict[str, bool] = {"enabled": True}
    mig: dict[str, str] = {"strategy": "single"}
    # B300 stays whole: MIG is configured per node only when someone asks for it.
    migManager: dict[str, Any] = {"enabled": True, "config": {"default": "all-disabled"}}
    validator: dict[str, Any] = {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}}
    nodeStatusExporter: dict[str, bool] = {"enabled": False}
    ccManager: dict[str, bool] = {"enabled": False}


def gpu_operator_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> GpuOperatorValues:
    gpu_pools = [p for p in cluster.pools if p.hardware.gpu is not None]
    driver = site.versions.images["nvidia-driver"]
    repository, _, image = driver.repository.rpartition("/")
    return GpuOperatorValues(
        operator={
            "runtimeClass": RUNTIME_CLASS,
            "resources": requests("200m", "256Mi", "1Gi"),
            **placed(cluster.system_pool.placement),
        },
        daemonsets={
            "priorityClassName": "system-node-critical",
            "updateStrategy": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "1"},
            # Replaces the operator's default list, so that default is repeated.
            "tolerations": [
                DEFAULT_OPERAND_TOLERATION,
                *(t for p in gpu_pools for t in p.placement.tolerations),
            ],
        },
        driver={
            "enabled": True,
            "repository": repository,
            "image": image,
            "version": driver.tag,
            "kernelModuleType": "open",  # required by B300 and by DMA-BUF GPUDirect RDMA
            # GPUDirect RDMA through DMA-BUF (open modules, kernel >= 5.12): no legacy nvidia-peermem.
            "rdma": {"enabled": False, "useHostMofed": False},
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"},
        },
    )
