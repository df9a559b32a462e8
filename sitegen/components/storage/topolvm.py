"""`topolvm`: local NVMe volumes from an LVM volume group on the local-cache pools."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from constructs.local_cache import DEVICE_CLASS
from sitegen.components.base import (
    CHANGES_NODES,
    ChartComponent,
    JsonPatch,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    ObjectPatch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.storage import PROJECT
from sitegen.components.values import (
    OFF,
    Affinity,
    Placed,
    Toggle,
    Toleration,
    Values,
    placed,
    required_affinity,
    tolerations_of,
)


class DeviceClass(Values):
    name: str
    volume_group: str = Field(alias="volume-group")
    default: bool
    spare_gb: int = Field(alias="spare-gb")


class OnCachePools(Values):
    affinity: Affinity
    tolerations: list[Toleration]


class Lvmd(OnCachePools):
    deviceClasses: list[DeviceClass]


class CapacityTracking(Values):
    enabled: bool


class Controller(Placed):
    replicaCount: int
    storageCapacityTracking: CapacityTracking


class Webhooks(Values):
    podMutatingWebhook: Toggle


class TopoLvmValues(Values):
    lvmd: Lvmd
    node: OnCachePools
    controller: Controller
    scheduler: Toggle = OFF  # storage capacity tracking instead
    webhook: Webhooks = Webhooks(podMutatingWebhook=OFF)
    cert_manager: Toggle = Field(default=OFF, alias="cert-manager")
    storageClasses: tuple[()] = ()  # none from the chart: the class is the `local-nvme` app


class TopoLvm(ChartComponent):
    name = "topolvm"
    chart = "topolvm"
    serves = ("topolvm.io/v1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "topolvm-system"
    security = NamespaceSecurity(
        "privileged",
        "lvmd manages the LVM volume group of the local NVMe cache",
        controllers="one chart release renders its controller beside its node agents; the host-access policy still admits host access there only to the agents' accounts (topolvm-controller)",
    )

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return bool(scope.pool_names & set(scope.site.storage.local_cache.pools))

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        cache = frozenset(scope.site.storage.local_cache.pools)
        return {
            self.object_key("DaemonSet", f"{self.name}-node"): NodeAgent(
                cache, "TopoLVM node plugin on the local-cache pools"
            ),
            self.object_key("DaemonSet", f"{self.name}-lvmd-0"): NodeAgent(
                cache, "lvmd on the local-cache pools"
            ),
        }

    def node_rbac(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            f"{self.namespace}/topolvm-node: {CHANGES_NODES}": "topolvm-node writes its node's free VG "
            "capacity into the Node's annotations, which the scheduler's capacity check reads; "
            "a stolen token could rewrite any Node (labels included): the ValidatingAdmissionPolicy "
            "work of the security issue is what narrows it to the node's own",
        }

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            ObjectPatch(
                "PriorityClass",
                "topolvm",
                "the chart writes the value as 1e+06, which the API server refuses for an int32",
                (JsonPatch("replace", "/value", 1_000_000),),
            )
        ]

    def values(self, ctx: ClusterContext) -> TopoLvmValues:
        cache = ctx.site.storage.local_cache
        pools = [p for p in ctx.cluster.pools if p.name in cache.pools]
        on_cache = {"affinity": required_affinity(pools), "tolerations": tolerations_of(pools)}
        return TopoLvmValues(
            lvmd=Lvmd(
                deviceClasses=[
                    DeviceClass(name=DEVICE_CLASS, volume_group=cache.volume_group, default=True, spare_gb=10)
                ],
                **on_cache,
            ),
            node=OnCachePools(**on_cache),
            controller=Controller(
                replicaCount=2,
                storageCapacityTracking=CapacityTracking(enabled=True),
                **placed(ctx.system_placement),
            ),
        )
