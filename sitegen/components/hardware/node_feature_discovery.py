"""`node-feature-discovery`: the cluster's only NFD (both NVIDIA charts' bundled copies are off)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import EVERY_POOL, ChartComponent, Layer, NamespaceSecurity, NodeAgent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.hardware import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.values import Placed, Resources, Toleration, Values, placed, requests

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


class Master(Placed):
    resources: Resources
    config: MasterConfig


class Worker(Values):
    tolerations: list[Toleration]
    resources: Resources
    config: WorkerConfig


class Gc(Placed):
    resources: Resources


class NfdValues(Values):
    master: Master
    worker: Worker
    gc: Gc


class NodeFeatureDiscovery(ChartComponent):
    name = "node-feature-discovery"
    chart = "node-feature-discovery"
    serves = ("nfd.k8s-sigs.io/v1alpha1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "node-feature-discovery"
    security = NamespaceSecurity(
        "privileged",
        "the worker reads host paths (/sys, /proc, /etc/os-release)",
        controllers="one chart release renders its controller beside its node agents; the host-access policy still admits host access there only to the agents' accounts (master, gc, the prune hook)",
    )

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus or scope.on_fabric

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key("DaemonSet", f"{self.name}-worker"): NodeAgent(
                frozenset({EVERY_POOL}), "hardware labels on every node, GPU and storage nodes included"
            )
        }

    def values(self, ctx: ClusterContext) -> NfdValues:
        system = placed(ctx.system_placement)
        every_taint = sorted(
            {t for p in ctx.cluster.pools for t in p.taints}, key=lambda t: (t.key, t.value or "")
        )
        return NfdValues(
            master=Master(
                resources=requests("100m", "256Mi", "1Gi"),
                config=MasterConfig(extraLabelNs=EXTRA_LABEL_NAMESPACES),
                **system,
            ),
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
            gc=Gc(resources=requests("10m", "64Mi", "256Mi"), **system),
        )
