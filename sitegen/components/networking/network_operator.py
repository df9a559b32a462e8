"""`network-operator`: the NVIDIA Network Operator controller; its resources are the `fabric` app."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import ChartComponent, JsonPatch, Layer, NamespaceSecurity, ObjectPatch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.hardware.node_feature_discovery import NodeFeatureDiscoveryWorker
from sitegen.components.networking import PROJECT
from sitegen.components.privilege import (
    CHANGES_NODES,
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    READS_SECRETS,
    RELABELS_NAMESPACES,
    REWRITES_ADMISSION,
    UPDATES_CRDS,
    Reviewed,
    RoleReview,
)
from sitegen.components.values import OFF, Placed, Resources, Toggle, Values, placed, requests


class BundledNfd(Values):
    enabled: bool = False
    deployNodeFeatureRules: bool = False


class Operator(Placed):
    resources: Resources


class NetworkOperatorValues(Values):
    nfd: BundledNfd = BundledNfd()  # the cluster's single NFD is its own app
    sriovNetworkOperator: Toggle = OFF
    operator: Operator


OPERATOR_ACCOUNT = "network-operator"  # the chart's ServiceAccount of the operator Deployment


class NetworkOperator(ChartComponent):
    name = "network-operator"
    chart = "network-operator"
    serves = ("k8s.cni.cncf.io/v1", "mellanox.com/v1alpha1")
    serves_at_runtime = ("nv-ipam.nvidia.com/v1alpha1",)  # nv-ipam, deployed by the NicClusterPolicy
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (NodeFeatureDiscoveryWorker,)  # its operands select on NFD's PCI labels (worker after master)
    namespace = "nvidia-network-operator"
    security = NamespaceSecurity(
        "privileged",
        "RDMA device plugin, Multus and CNI installers write to the host",
        controllers="the operator deploys the NicClusterPolicy's agents into its own namespace, so it and "
        "its CRD hook Jobs run beside them",
    )

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(WORLD, (80, 443), "the DOCA driver container fetches the running kernel's headers")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.on_fabric

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            ObjectPatch(
                "ClusterRoleBinding",
                "network-operator",
                "the chart binds the operator's ClusterRole (Secrets, pods, RBAC in every namespace) to the "
                "group of every account of its namespace, the agents it runs on GPU nodes included: the "
                "operator's own account is the one that needs it (each agent state it deploys brings its "
                "own account and role, as nv-ipam's does)",
                (
                    JsonPatch(
                        "replace",
                        "/subjects",
                        [{"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": self.namespace}],
                    ),
                ),
            )
        ]

    def values(self, ctx: ClusterContext) -> NetworkOperatorValues:
        return NetworkOperatorValues(
            operator=Operator(resources=requests("100m", "256Mi", "1Gi"), **placed(ctx.system_placement))
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "network-operator": RoleReview(
                (READS_SECRETS,), "the NicClusterPolicy's image pull and IPAM Secrets"
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/network-operator": Reviewed(
                (
                    READS_SECRETS,
                    MAKES_PRIVILEGED_PODS,
                    PATCHES_PRIVILEGED_PODS,
                    REWRITES_ADMISSION,
                    CHANGES_NODES,
                    RELABELS_NAMESPACES,
                    UPDATES_CRDS,
                ),
                "deploys the DOCA driver, RDMA device plugin and IPAM agents (privileged) from the NicClusterPolicy, labels the fabric nodes, evicts pods for driver upgrades and manages its webhook and CRDs",
            ),
            f"{self.namespace}/network-operator-hooks-sa": Reviewed(
                (UPDATES_CRDS,),
                "the chart's pre-upgrade hook applies the operator's CRDs (Helm does not upgrade CRDs)",
            ),
        }
