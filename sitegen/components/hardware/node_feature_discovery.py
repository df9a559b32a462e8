"""`node-feature-discovery` and its worker: the cluster's only NFD (both NVIDIA charts' bundled copies are
off)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import EVERY_POOL, ChartComponent, Layer, NamespaceSecurity, NodeAgent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.hardware import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import CHANGES_NODES, Reviewed
from sitegen.components.values import (
    Placed,
    PodSecurityContext,
    Resources,
    Toleration,
    Values,
    placed,
    requests,
)

# nvidia.com labels (GPU Feature Discovery's) pass the master's namespace filter.
EXTRA_LABEL_NAMESPACES = ["nvidia.com"]
# PCI classes 02 (network, incl. 0207 InfiniBand) and 03 (display, incl. 0302 3D) give the
# pci-10de / pci-15b3 labels the GPU and Network Operators key on.
PCI_CLASSES = ["02", "03", "0b40", "12"]


class MasterConfig(Values):
    extraLabelNs: list[str]


class PciSource(Values):
    deviceClassWhitelist: list[str]
    deviceLabelFields: list[str]


class Sources(Values):
    pci: PciSource


class WorkerConfig(Values):
    sources: Sources


class Enable(Values):
    enable: bool


OFF = Enable(enable=False)


class Master(Placed):
    resources: Resources
    config: MasterConfig
    # merged into the chart's (non-root, read-only, no capabilities); the prune Job takes it too
    securityContext: PodSecurityContext = PodSecurityContext()


class Worker(Values):
    tolerations: list[Toleration]
    resources: Resources
    config: WorkerConfig
    podSecurityContext: PodSecurityContext = PodSecurityContext()  # it only reads host files


class Gc(Placed):
    resources: Resources
    podSecurityContext: PodSecurityContext = PodSecurityContext()


class NfdValues(Values):
    master: Master
    worker: Enable = OFF
    gc: Gc


class NfdWorkerValues(Values):
    master: Enable = OFF
    worker: Worker
    gc: Enable = OFF
    postDeleteCleanup: bool = False  # the master's release prunes the labels it made


# NFD 0.19 in two releases of its chart, each in a namespace of its own: the master and its garbage
# collector in a restricted namespace, the worker (host paths) alone in a privileged one. They meet
# only through the API: the worker writes NodeFeature objects in its namespace, the master reads
# them everywhere and labels the nodes.


class NodeFeatureDiscovery(ChartComponent):
    name = "node-feature-discovery"
    chart = "node-feature-discovery"
    serves = ("nfd.k8s-sigs.io/v1alpha1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "node-feature-discovery"
    security = NamespaceSecurity("restricted", "the master and its garbage collector (the worker: its own)")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus or scope.on_fabric

    def values(self, ctx: ClusterContext) -> NfdValues:
        system = placed(ctx.system_placement)
        return NfdValues(
            master=Master(
                resources=requests("100m", "256Mi", "1Gi"),
                config=MasterConfig(extraLabelNs=EXTRA_LABEL_NAMESPACES),
                **system,
            ),
            gc=Gc(resources=requests("10m", "64Mi", "256Mi"), **system),
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/node-feature-discovery": Reviewed(
                (CHANGES_NODES,),
                "NFD's master writes the feature labels the GPU Operator and the pools select by",
            ),
        }


class NodeFeatureDiscoveryWorker(ChartComponent):
    name = "node-feature-discovery-worker"
    chart = NodeFeatureDiscovery.chart
    release = NodeFeatureDiscovery.name  # the chart's names: node-feature-discovery-worker
    renders_crds = False
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (NodeFeatureDiscovery,)  # its CRDs
    namespace = "node-feature-discovery-worker"
    security = NamespaceSecurity("privileged", "the worker reads host paths (/sys, /proc, /etc/os-release)")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return NodeFeatureDiscovery.applies(scope)

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key("DaemonSet", f"{self.release}-worker"): NodeAgent(
                frozenset({EVERY_POOL}), "hardware labels on every node, GPU and storage nodes included"
            )
        }

    def values(self, ctx: ClusterContext) -> NfdWorkerValues:
        every_taint = sorted(
            {t for p in ctx.cluster.pools for t in p.taints}, key=lambda t: (t.key, t.value or "")
        )
        return NfdWorkerValues(
            # The worker must tolerate every pool taint before GPU or storage nodes can be labelled.
            worker=Worker(
                tolerations=[Toleration(**t.toleration()) for t in every_taint],
                resources=requests("50m", "128Mi", "512Mi"),
                config=WorkerConfig(
                    sources=Sources(
                        pci=PciSource(deviceClassWhitelist=PCI_CLASSES, deviceLabelFields=["vendor"])
                    )
                ),
            ),
        )
