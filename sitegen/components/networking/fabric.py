"""`fabric`: the NDR rails as Network Operator resources (NicClusterPolicy, per-pool RDMA resources,
an IP pool per rail, a rail network per tenant); see constructs/fabric.py."""

from __future__ import annotations

from constructs import Construct
from constructs.fabric import FabricImages, RailFabric
from constructs.site_watches import Watch
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking import PROJECT
from sitegen.components.networking.network_operator import NetworkOperator
from sitegen.model import ImagePin

IMAGES = {
    "network-operator-multus-cni": "the NicClusterPolicy",
    "network-operator-plugins": "the NicClusterPolicy",
    "network-operator-ipoib-cni": "the NicClusterPolicy",
    "network-operator-nvidia-k8s-ipam": "the NicClusterPolicy",
    "network-operator-k8s-rdma-shared-dev-plugin": "the NicNodePolicies",
    "network-operator-doca-driver": "the NicNodePolicies with fabric.driver doca-container",
}


# Healthy once the Network Operator reports its NicClusterPolicy ready (Multus, CNI plugins, IPoIB CNI,
# nv-ipam running); `error` carries the operator's reason. `ignore` is for good: the operator reconciles
# only the policy named nic-cluster-policy and marks any other so (v26.4.0
# controllers/nicclusterpolicy_controller.go, handleUnsupportedInstance).
NIC_CLUSTER_POLICY_HEALTH = """hs = {status = "Progressing", message = "waiting for the Network Operator"}
if obj.status ~= nil and obj.status.state ~= nil then
  if obj.status.state == "ready" then
    hs.status = "Healthy"
    hs.message = "the fabric's CNI stack runs"
  elseif obj.status.state == "error" then
    hs.status = "Degraded"
    hs.message = obj.status.reason or "error"
  elseif obj.status.state == "ignore" then
    hs.status = "Degraded"
    hs.message = "ignored by the Network Operator: it reconciles only the NicClusterPolicy named nic-cluster-policy"
  else
    hs.message = obj.status.state
  end
end
return hs
"""


class Fabric(RenderedComponent):
    name = "fabric"
    project = PROJECT
    layer = Layer.RESOURCES
    skip_dry_run = True
    images = IMAGES
    health_checks = {("mellanox.com", "NicClusterPolicy"): NIC_CLUSTER_POLICY_HEALTH}
    after = (NetworkOperator,)
    namespace = NetworkOperator.namespace  # the IP pools live with the operator

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.on_fabric

    def watches(self, scope: ClusterScope) -> list[Watch]:
        # node-exporter's infiniband series of each pool's NDR ports
        return list(scope.ndr_ports(scope.cluster.pools))

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        composer = "the Network Operator (a NicClusterPolicy's repository, image and version)"

        def image(key: str) -> ImagePin:
            return ctx.tag_only_image(key, composer)

        RailFabric(
            scope,
            "Fabric",
            cluster=ctx.cluster,
            fabric=ctx.site.fabric,
            subnets=ctx.variant.rail_subnets(ctx.site.fabric, ctx.cluster),
            images=FabricImages(
                multus=image("network-operator-multus-cni"),
                cni_plugins=image("network-operator-plugins"),
                ipoib=image("network-operator-ipoib-cni"),
                nv_ipam=image("network-operator-nvidia-k8s-ipam"),
                rdma_shared_device_plugin=image("network-operator-k8s-rdma-shared-dev-plugin"),
                doca_driver=image("network-operator-doca-driver"),
            ),
            ipam_namespace=self.namespace,
            # every namespace of GPU jobs Kueue queues: the tenants' and the health checks'
            tenants=sorted(c.namespace for c in ctx.components if c.queued),
        )
