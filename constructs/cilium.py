"""Cilium resources we own: the load-balancer IP pool of each cluster (LB-IPAM)."""

from __future__ import annotations

from cdk8s import ApiObject, JsonPatch

from constructs import Construct
from sitegen.layout import ClusterLayout


class LoadBalancerPool(Construct):
    """The cluster's load-balancer addresses, answered by ARP from its system pool on the Ethernet bond."""

    def __init__(self, scope: Construct, id: str, *, cluster: ClusterLayout, interface: str) -> None:
        super().__init__(scope, id)
        policy = ApiObject(
            self,
            "Announcement",
            api_version="cilium.io/v2alpha1",
            kind="CiliumL2AnnouncementPolicy",
            metadata={"name": f"{cluster.name}-services"},
        )
        policy.add_json_patch(
            JsonPatch.add(
                "/spec",
                {
                    "nodeSelector": {"matchLabels": cluster.system_pool.placement.node_selector},
                    "interfaces": [f"^{interface}$"],
                    "loadBalancerIPs": True,
                },
            )
        )
        obj = ApiObject(
            self,
            "Resource",
            api_version="cilium.io/v2",
            kind="CiliumLoadBalancerIPPool",
            metadata={"name": f"{cluster.name}-services"},
        )
        obj.add_json_patch(
            JsonPatch.add("/spec", {"blocks": [{"cidr": str(cluster.spec.load_balancer_cidr)}]})
        )
