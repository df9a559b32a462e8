"""`topolvm` and `topolvm-node`: local NVMe volumes from an LVM volume group on the local-cache pools."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from constructs.local_cache import DEVICE_CLASS
from sitegen.components.base import (
    ChartAgents,
    ChartComponent,
    CsiAccess,
    JsonPatch,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    ObjectPatch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.node_access import CHANGES_NODES
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import CREATES_VOLUMES, PATCHES_PRIVILEGED_PODS, Reviewed
from sitegen.components.runtime_needs import ApiCall, HostVolumeGroups, RuntimeNeeds
from sitegen.components.storage import PROJECT
from sitegen.components.values import (
    OFF,
    Affinity,
    Placed,
    PodSecurityContext,
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


class ControllerPodSecurity(PodSecurityContext):
    """The chart's pod context for the controller (uid and gid 10000), plus what `restricted` asks."""

    runAsNonRoot: bool = True


class TopoLvmValues(Values):
    lvmd: Lvmd
    node: OnCachePools
    controller: Controller
    scheduler: Toggle = OFF  # storage capacity tracking instead
    webhook: Webhooks = Webhooks(podMutatingWebhook=OFF)
    cert_manager: Toggle = Field(default=OFF, alias="cert-manager")
    storageClasses: tuple[()] = ()  # none from the chart: the class is the `local-nvme` app
    securityContext: ControllerPodSecurity = ControllerPodSecurity()  # merged into the chart's


class TopoLvm(ChartComponent):
    name = "topolvm"
    chart = "topolvm"
    serves = ("topolvm.io/v1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    # The access modes TopoLVM's CreateVolume accepts (the bring-up's refusals/csi.py reads them): topolvm/topolvm
    # v0.41.0 internal/driver/controller.go takes SINGLE_NODE_WRITER only ("unsupported access mode: %s") and
    # its controller does not advertise SINGLE_NODE_MULTI_WRITER (so the provisioner maps ReadWriteOnce and
    # ReadWriteOncePod to SINGLE_NODE_WRITER; ReadOnlyMany and ReadWriteMany are refused).
    csi_access = CsiAccess(
        "topolvm.io",
        single_node_multi_writer=False,
        modes=frozenset(("SINGLE_NODE_WRITER",)),
        refusal="unsupported access mode: {mode}",
    )
    after = (Cilium, Namespaces)
    namespace = "topolvm-system"
    security = NamespaceSecurity("restricted", "the CSI controller (the node plugin and lvmd: topolvm-node)")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return bool(scope.pool_names & set(scope.site.storage.local_cache.pools))

    def keeps(self, kind: str, name: str) -> bool:
        return TopoLvmNode.controllers_keep(kind, name)

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

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/topolvm-controller": Reviewed(
                (CREATES_VOLUMES, PATCHES_PRIVILEGED_PODS, CHANGES_NODES),
                "the CSI provisioner creates each claim's PersistentVolume; the controller clears finalizers of Nodes it removed and updates pods whose volumes it resizes",
            ),
        }


class TopoLvmNode(ChartAgents):
    name = "topolvm-node"
    chart = TopoLvm.chart
    controllers = TopoLvm
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (TopoLvm,)  # its PriorityClass and CSIDriver
    namespace = "topolvm-node"
    security = NamespaceSecurity("privileged", "lvmd manages the LVM volume group of the local NVMe cache")
    # topolvm v0.41.0 (chart 17.1.0): the node plugin's LogicalVolume controller, whose marker in
    # internal/controller/logicalvolume_controller.go is
    # `groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch;update;patch`; lvmd (the chart's
    # topolvm-lvmd-<idx> DaemonSets) exits at start when a device class's volume group is not on its
    # host (cmd/lvmd/app/root.go: SearchVolumeGroupList, "volume group not found").
    runtime_needs = RuntimeNeeds(
        api=tuple(
            ApiCall(
                "topolvm-node", verb, "logicalvolumes", "topolvm.io",
                source="topolvm v0.41.0 internal/controller/logicalvolume_controller.go",
            )
            for verb in ("list", "watch")
        ),
        volume_groups=HostVolumeGroups(
            "topolvm-lvmd", "lvmd.yaml", "device-classes", "volume-group",
            refusal='lvmd: "volume group not found" (volume_group: {group}): it exits',
            source="topolvm v0.41.0 cmd/lvmd/app/root.go",
        ),
    )  # fmt: skip

    @staticmethod
    def is_agent(kind: str, name: str) -> bool:
        # the node plugin and lvmd (DaemonSets, accounts, lvmd's configuration) and the node plugin's
        # ClusterRole and binding, which the chart names `<namespace>:node`
        if kind in ("ClusterRole", "ClusterRoleBinding"):
            return name.endswith(":node")
        return kind in ("DaemonSet", "ServiceAccount", "ConfigMap") and name.startswith(
            ("topolvm-node", "topolvm-lvmd")
        )

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return TopoLvm.applies(scope)

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        cache = frozenset(scope.site.storage.local_cache.pools)
        return {
            self.object_key("DaemonSet", f"{self.release_name}-node"): NodeAgent(
                cache, "TopoLVM node plugin on the local-cache pools"
            ),
            self.object_key("DaemonSet", f"{self.release_name}-lvmd-0"): NodeAgent(
                cache, "lvmd on the local-cache pools"
            ),
        }

    def node_rbac(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            f"{self.namespace}/topolvm-node: {CHANGES_NODES}": "topolvm-node writes its node's free VG "
            "capacity into the Node's annotations, which the scheduler's capacity check reads; "
            "the policy sitegen-node-agents-own-node lets its token change only the Node its pod runs "
            "on, never taints, unschedulable, role or pool labels",
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/topolvm-node": Reviewed(
                (CHANGES_NODES,),
                "writes its Node's capacity annotations (topolvm.io/<class>) the scheduler places claims by",
            ),
        }
