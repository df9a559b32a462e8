"""`csi-isilon` and `csi-isilon-node`: Dell's CSI driver for PowerScale, on the pools that mount NFS."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from constructs.powerscale import ONEFS_API_PORT, PROVISIONER
from sitegen.components.base import (
    ChartAgents,
    ChartComponent,
    CsiAccess,
    Layer,
    NamespaceSecurity,
    NodeAgent,
    ObjectPatch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.node_access import CHANGES_NODES
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import CREATES_VOLUMES, Reviewed, persistent_only
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Toleration, Values, placed, tolerations_of


class Controller(Placed):
    controllerCount: int


class Node(Values):
    tolerations: list[Toleration]


class CsiIsilonValues(Values):
    controller: Controller
    node: Node
    isiAccessZone: str
    isiPath: str
    isiAuthType: int = 1  # session-based authentication
    skipCertificateValidation: bool = False  # the OneFS CA comes with the credentials
    certSecretCount: int = 1
    enableQuota: bool = True
    # the chart's format: a quoted, bracketed, comma-separated list of CIDRs in one string
    allowedNetworks: str


class CsiIsilon(ChartComponent):
    name = "csi-isilon"
    chart = "csi-isilon"
    project = PROJECT
    # a service, not a foundation: its pods mount the credentials `powerscale` writes from the vault
    layer = Layer.SERVICES
    # The access modes PowerScale's CreateVolume accepts (the bring-up's refusals/csi.py reads them):
    # dell/csi-powerscale service/controller.go (its newest public commit, "CSM 1.16 updates"; 2.17.2's own
    # tree is not there) advertises SINGLE_NODE_MULTI_WRITER and accepts every mode the provisioner then
    # sends (ReadWriteOnce -> SINGLE_NODE_MULTI_WRITER, ReadWriteOncePod -> SINGLE_NODE_SINGLE_WRITER,
    # ReadOnlyMany, ReadWriteMany); it refuses only SINGLE_NODE_READER_ONLY and MULTI_NODE_SINGLE_WRITER,
    # which no Kubernetes access mode maps to.
    csi_access = CsiAccess(
        PROVISIONER,
        single_node_multi_writer=True,
        modes=frozenset(
            (
                "SINGLE_NODE_WRITER",
                "SINGLE_NODE_SINGLE_WRITER",
                "SINGLE_NODE_MULTI_WRITER",
                "MULTI_NODE_READER_ONLY",
                "MULTI_NODE_MULTI_WRITER",
            )
        ),
        refusal="unknown or unsupported access mode",
    )
    after = (Cilium, Namespaces)
    namespace = "isilon"  # Dell's documented namespace
    security = NamespaceSecurity("baseline", "the CSI controller (the node plugin: isilon-node)")

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        # the API's host by name where config names it (Cilium learns its addresses from DNS)
        host = urlsplit(ctx.site.storage.powerscale.endpoint).hostname or ""
        names = () if re.fullmatch(r"[\d.]+|.*:.*", host) else (host,)
        return [Flow(WORLD, (ONEFS_API_PORT,), "PowerScale's API (the controller provisions exports)", names)]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return bool(scope.pool_names & set(scope.site.storage.powerscale.mount_pools))

    def keeps(self, kind: str, name: str) -> bool:
        return CsiIsilonNode.controllers_keep(kind, name)

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [persistent_only(PROVISIONER)]

    def values(self, ctx: ClusterContext) -> CsiIsilonValues:
        ps = ctx.site.storage.powerscale
        mounting = [p for p in ctx.cluster.pools if p.name in ps.mount_pools]
        return CsiIsilonValues(
            controller=Controller(controllerCount=2, **placed(ctx.system_placement)),
            # The chart places the node plugin by taint only: it tolerates the taints of the tainted pools
            # that mount NFS; the untainted ones are all listed in config (a model rule).
            node=Node(tolerations=tolerations_of(mounting)),
            isiAccessZone=ps.access_zone,
            isiPath=ps.base_path,
            # NFS exports only to the Kubernetes plane, where the node IPs live
            allowedNetworks=f"[{ctx.site.network.kubernetes.cidr}]",
        )

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/csi-isilon-controller": Reviewed(
                (CREATES_VOLUMES,),
                "the CSI provisioner creates a PersistentVolume per export it makes",
            ),
        }


class CsiIsilonNode(ChartAgents):
    name = "csi-isilon-node"
    chart = CsiIsilon.chart
    controllers = CsiIsilon
    project = PROJECT
    layer = Layer.SERVICES
    after = (CsiIsilon,)  # its CSIDriver
    namespace = "isilon-node"
    security = NamespaceSecurity("privileged", "the PowerScale CSI node plugin mounts NFS for the kubelet")

    @staticmethod
    def is_agent(kind: str, name: str) -> bool:
        return name.startswith(f"{CsiIsilon.name}-node")  # its DaemonSet, account, ClusterRole and binding

    @staticmethod
    def is_shared(kind: str, name: str) -> bool:
        return (kind, name) == ("ConfigMap", f"{CsiIsilon.name}-config-params")  # the driver's log settings

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return CsiIsilon.applies(scope)

    def node_rbac(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            f"{self.namespace}/csi-isilon-node: {CHANGES_NODES}": "the node plugin labels its Node with the "
            "PowerScale topology keys (csi-isilon.dellemc.com/<endpoint>) the controller provisions by; "
            "the policy sitegen-node-agents-own-node lets its token change only the Node its pod runs "
            "on, never taints, unschedulable, role or pool labels",
        }

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        return {
            self.object_key("DaemonSet", f"{self.release_name}-node"): NodeAgent(
                frozenset(scope.site.storage.powerscale.mount_pools),
                "PowerScale CSI node plugin on the pools that mount NFS",
            )
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/csi-isilon-node": Reviewed(
                (CHANGES_NODES, CREATES_VOLUMES),
                "the node plugin labels its Node with the PowerScale topology keys (sitegen-node-agents-own-node bounds it to its own Node); the chart's ClusterRole also creates PersistentVolumes, which a node plugin never does and sitegen-persistent-volumes refuses it",
            ),
        }
