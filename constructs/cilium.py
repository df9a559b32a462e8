"""Cilium resources we own: the load-balancer IP pool of each cluster (LB-IPAM)."""

from __future__ import annotations

from constructs import Construct
from constructs.objects import api_object
from sitegen.model import ClusterLayout


class LoadBalancerPool(Construct):
    """The cluster's load-balancer addresses, answered by ARP from its system pool on the Ethernet bond."""

    def __init__(self, scope: Construct, id: str, *, cluster: ClusterLayout, interface: str) -> None:
        super().__init__(scope, id)
        name = {"name": f"{cluster.name}-services"}
        api_object(
            self,
            "Announcement",
            "cilium.io/v2alpha1",
            "CiliumL2AnnouncementPolicy",
            name,
            spec={
                "nodeSelector": {"matchLabels": cluster.system_pool.placement.node_selector},
                "interfaces": [f"^{interface}$"],
                "loadBalancerIPs": True,
            },
        )
        api_object(
            self,
            "Resource",
            "cilium.io/v2",
            "CiliumLoadBalancerIPPool",
            name,
            spec={"blocks": [{"cidr": str(cluster.spec.load_balancer_cidr)}]},
        )
