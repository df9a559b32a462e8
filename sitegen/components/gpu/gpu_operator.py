"""`gpu-operator`: operands on the GPU pool only, the B300 driver branch, DMA-BUF GPUDirect RDMA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from constructs.argocd import application_name
from constructs.gpu_workload import BATCH_LABEL, RUNTIME_CLASS
from constructs.node_faults import NODE_LABEL
from constructs.site_watches import GpuPoolWatch, Watch
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, NodeAgent, ObjectPatch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.gpu import PROJECT
from sitegen.components.hardware.node_feature_discovery import NodeFeatureDiscoveryWorker
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack, Relabeling
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.privilege import (
    CHANGES_NODES,
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    RELABELS_NAMESPACES,
    UPDATES_CRDS,
    Reviewed,
    narrow_rule,
)
from sitegen.components.values import OFF, ON, Placed, Resources, Toggle, Toleration, Values, placed, requests
from sitegen.model import PoolLayout, paths

# The operator labels every node with an NVIDIA PCI device; its operands select on these labels.
GPU_PRESENT = {"nvidia.com/gpu.present": "true"}
# What `daemonsets.tolerations` replaces: the operator's own default toleration.
# The one admission policy the operator writes (its DRA driver's state, manifests/state-dra-driver/0700):
# the policy and its binding share the name.
DRA_POLICY = "resourceslices-policy-nvidia-dra-driver"
POLICIES = {
    "apiGroups": ["admissionregistration.k8s.io"],
    "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
}
DEFAULT_OPERAND_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")


class Operator(Placed):
    runtimeClass: str
    resources: Resources


class RollingUpdate(Values):
    maxUnavailable: str


class Daemonsets(Values):
    priorityClassName: str
    updateStrategy: Literal["RollingUpdate", "OnDelete"]
    rollingUpdate: RollingUpdate
    tolerations: list[Toleration]


class DriverRdma(Values):
    enabled: bool
    useHostMofed: bool


class WaitForCompletion(Values):
    podSelector: str
    timeoutSeconds: int  # 0: as long as the job runs


class UpgradePolicy(Values):
    autoUpgrade: bool
    maxParallelUpgrades: int
    maxUnavailable: str
    waitForCompletion: WaitForCompletion


class Driver(Values):
    enabled: bool = True
    repository: str
    image: str
    version: str
    kernelModuleType: Literal["auto", "open", "proprietary"]
    rdma: DriverRdma
    upgradePolicy: UpgradePolicy


class DcgmServiceMonitor(Values):
    enabled: bool
    relabelings: list[Relabeling]


class DcgmMetricsConfig(Values):
    name: str
    create: bool
    data: str


class DcgmExporterMonitor(Values):
    enabled: bool
    config: DcgmMetricsConfig
    serviceMonitor: DcgmServiceMonitor


# What the exporter collects, in place of its default list (dcgm-exporter's etc/default-counters.csv,
# whose alerts-worthy fields are commented out): every DCGM field the site's alerts, the GPU node guard
# and the dashboards read (a test holds them to this list), then what a GPU site reads by hand.
# (field, Prometheus type, help)
DCGM_METRICS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    # NVLink5 (B300) and later only, across all links of the GPU (go-dcgm's field notes)
    ("DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS", "counter", "NVLink recoveries that brought a link back up."),
    ("DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS", "counter", "NVLink recoveries that failed: the link went down."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "NVLink transmit throughput (bytes per second)."),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "NVLink receive throughput (bytes per second)."),
)  # fmt: skip
METRICS_CONFIG = "sitegen-dcgm-metrics"  # the chart's ConfigMap of them (key dcgm-metrics.csv)


def metrics_csv() -> str:
    return "".join(f"{field}, {kind}, {text}\n" for field, kind, text in DCGM_METRICS)


class Mig(Values):
    strategy: Literal["single", "mixed"]


class MigConfig(Values):
    default: str


class MigManager(Values):
    enabled: bool
    config: MigConfig


class EnvVar(Values):
    name: str
    value: str


class ValidatorPlugin(Values):
    env: list[EnvVar]


class Validator(Values):
    plugin: ValidatorPlugin


class Toolkit(Values):
    enabled: bool = True
    env: list[EnvVar]


class GpuOperatorValues(Values):
    nfd: Toggle = OFF  # the cluster's single NFD is its own app
    operator: Operator
    cdi: Toggle = ON
    daemonsets: Daemonsets
    driver: Driver
    # GPUs only by the device plugin's allocation (CDI, the operator's default: the device plugin's
    # strategy is cdi-annotations,cdi-cri): an unprivileged container's NVIDIA_VISIBLE_DEVICES selects
    # nothing, so a pod that requested no GPU sees none (the installer's default accepts the variable)
    toolkit: Toolkit = Toolkit(
        env=[EnvVar(name="ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", value="false")]
    )
    devicePlugin: Toggle = ON
    gfd: Toggle = ON
    dcgm: Toggle = OFF  # the exporter embeds its own host engine
    # Each series labelled with the node of the exporter's pod, as node-exporter's: the alerts and the
    # GPU node guard read `node`, not the exporter's own host label (constructs/node_faults.py)
    dcgmExporter: DcgmExporterMonitor = DcgmExporterMonitor(
        enabled=True,
        config=DcgmMetricsConfig(name=METRICS_CONFIG, create=True, data=metrics_csv()),
        serviceMonitor=DcgmServiceMonitor(
            enabled=True,
            relabelings=[
                Relabeling(
                    sourceLabels=["__meta_kubernetes_pod_node_name"], targetLabel=NODE_LABEL, action="replace"
                )
            ],
        ),
    )
    gdrcopy: Toggle = ON
    mig: Mig = Mig(strategy="single")
    # B300 stays whole: MIG is configured per node only when someone asks for it.
    migManager: MigManager = MigManager(enabled=True, config=MigConfig(default="all-disabled"))
    validator: Validator = Validator(
        plugin=ValidatorPlugin(env=[EnvVar(name="WITH_WORKLOAD", value="false")])
    )
    nodeStatusExporter: Toggle = OFF
    ccManager: Toggle = OFF


# Healthy once the operator reports its ClusterPolicy ready (driver, toolkit, device plugin running where
# NFD found NVIDIA devices); `ignored` means another ClusterPolicy is in charge.
CLUSTER_POLICY_HEALTH = """hs = {status = "Progressing", message = "waiting for the GPU Operator"}
if obj.status ~= nil and obj.status.state ~= nil then
  if obj.status.state == "ready" then
    hs.status = "Healthy"
    hs.message = "the GPU stack runs on every GPU node"
  elseif obj.status.state == "ignored" then
    hs.status = "Degraded"
    hs.message = "ignored: another ClusterPolicy is in charge"
  else
    hs.message = obj.status.state
  end
end
return hs
"""


class GpuOperator(ChartComponent):
    name = "gpu-operator"
    chart = "gpu-operator"
    serves = ("nvidia.com/v1", "nvidia.com/v1alpha1", "resource.nvidia.com/v1beta1")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (
        NodeFeatureDiscoveryWorker,
        KubePrometheusStack,
    )  # GPU nodes by NFD's PCI labels; the DCGM ServiceMonitor
    namespace = "gpu-operator"
    security = NamespaceSecurity(
        "privileged",
        "driver container, toolkit and device plugin load kernel modules and run privileged",
        controllers="the operator deploys the ClusterPolicy's agents into its own namespace, so it and its "
        "CRD hook Jobs run beside them",
    )
    images = {"nvidia-driver": "the GPU Operator's driver"}
    health_checks = {("nvidia.com", "ClusterPolicy"): CLUSTER_POLICY_HEALTH}
    driver_root = "/run/nvidia/driver"  # where its driver container keeps its root on the host

    @staticmethod
    def topology_title(pool: PoolLayout) -> str:
        return f"GPU topology: pool {pool.name}"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        """Once its driver runs, each GPU of a pool with rails checked against its rail's NIC (no driver
        exists before, so the fabric's preparation only announces the check)."""
        return [
            OperatorStep(
                Stage.HARDWARE_CHECKS,
                self.topology_title(pool),
                f"""
on every host of pool {pool.name} (its driver runs there now),
check each GPU against its rail's NIC: on one PCIe switch (`nvidia-smi topo -m` from the driver's root,
`{self.driver_root}`). A host that fails: cordon it and fix it before it takes GPU jobs; its rails cross the CPU.

```sh
bash {paths.in_repo(paths.topology_script(scope.variant.name, scope.cluster.name, pool.name))}
```
""",
                after=application_name(scope.cluster.name, self.name),
            )
            for pool in scope.cluster.worker_pools
            if pool.name in scope.site.fabric.nics and pool.hardware.gpu is not None
        ]

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(WORLD, (80, 443), "the driver container fetches the running kernel's headers")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def watches(self, scope: ClusterScope) -> list[Watch]:
        # dcgm-exporter's series: each host of a GPU pool shows every GPU it has
        return [
            GpuPoolWatch(p.name, p.hardware.gpu.count, tuple(h.name for h in p.hosts))
            for p in scope.gpu_pools
            if p.hardware.gpu is not None
        ]

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key(
                "ClusterPolicy", "cluster-policy", namespace="", path="$.spec.daemonsets"
            ): NodeAgent(
                frozenset(p.name for p in scope.gpu_pools),
                "driver, toolkit, device plugin, GFD, DCGM exporter, MIG manager, validator: GPU nodes only",
                implied_selector=GPU_PRESENT,
            )
        }

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            narrow_rule(
                "gpu-operator",
                21,
                {**POLICIES, "verbs": ["get", "list", "watch", "create", "update", "delete"]},
                [
                    {**POLICIES, "verbs": ["get", "list", "watch", "create"]},
                    {**POLICIES, "verbs": ["update", "delete"], "resourceNames": [DRA_POLICY]},
                ],
                why="the operator changes only its DRA driver's policy; update and delete of every policy "
                "would let it (or its stolen token) switch off the site's guard rails",
            )
        ]

    def values(self, ctx: ClusterContext) -> GpuOperatorValues:
        driver = ctx.tag_only_image(
            "nvidia-driver", "the GPU Operator (driver.version, with the OS appended)"
        )
        repository, _, image = driver.repository.rpartition("/")
        return GpuOperatorValues(
            operator=Operator(
                runtimeClass=RUNTIME_CLASS,
                resources=requests("200m", "256Mi", "1Gi"),
                **placed(ctx.system_placement),
            ),
            daemonsets=Daemonsets(
                priorityClassName="system-node-critical",
                updateStrategy="RollingUpdate",
                rollingUpdate=RollingUpdate(maxUnavailable="1"),
                # Replaces the operator's default list, so that default is repeated.
                tolerations=[
                    DEFAULT_OPERAND_TOLERATION,
                    *(Toleration(**t) for p in ctx.gpu_pools for t in p.placement.tolerations),
                ],
            ),
            driver=Driver(
                repository=repository,
                image=image,
                version=driver.tag,
                kernelModuleType="open",  # required by B300 and by DMA-BUF GPUDirect RDMA
                # GPUDirect RDMA through DMA-BUF (open modules, kernel >= 5.12): no legacy nvidia-peermem.
                rdma=DriverRdma(enabled=False, useHostMofed=False),
                # A driver change rolls one GPU node at a time (a bad driver stops at one node), and a
                # node is taken only once its batch jobs have finished: a multi-node job loses no rank
                # mid-step. Model servers are not waited on: their pods move, Kueue readmits them.
                upgradePolicy=UpgradePolicy(
                    autoUpgrade=True,
                    maxParallelUpgrades=1,
                    maxUnavailable="1",
                    waitForCompletion=WaitForCompletion(podSelector=f"{BATCH_LABEL}=true", timeoutSeconds=0),
                ),
            ),
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/gpu-operator": Reviewed(
                (
                    MAKES_PRIVILEGED_PODS,
                    PATCHES_PRIVILEGED_PODS,
                    CHANGES_NODES,
                    RELABELS_NAMESPACES,
                    UPDATES_CRDS,
                ),
                "deploys the privileged driver, toolkit and device plugin into its own namespace, labels GPU nodes and its namespace, evicts and labels pods for driver upgrades, upgrades its CRDs; its admission-policy writes are narrowed to its DRA policy",
            ),
            f"{self.namespace}/gpu-operator-upgrade-crd-hook-sa": Reviewed(
                (UPDATES_CRDS,),
                "the chart's pre-upgrade hook applies the operator's CRDs (Helm does not upgrade CRDs)",
            ),
        }
