"""Cilium resources we own: the load-balancer IP pool of each cluster (LB-IPAM)."""

from __future__ import annotations

from constructs import Construct
from constructs.objects import api_object
from constructs.s3_front_doors import FRONT_LABEL, general_range
from sitegen.model import ClusterLayout


class LoadBalancerPool(Construct):
    """The cluster's load-balancer addresses, answered by ARP from its system pool on the Ethernet bond."""

    def __init__(
        self, scope: Construct, id: str, *, cluster: ClusterLayout, interface: str, front_doors: int = 0
    ) -> None:
        super().__init__(scope, id)
        name = {"name": f"{cluster.name}-services"}
        # AIStor's front doors have addresses and announcements of their own (constructs/s3_front_doors.py)
        others = {"matchExpressions": [{"key": FRONT_LABEL, "operator": "DoesNotExist"}]}
        api_object(
            self,
            "Announcement",
            "cilium.io/v2alpha1",
            "CiliumL2AnnouncementPolicy",
            name,
            spec={
                "nodeSelector": {"matchLabels": cluster.system_pool.placement.node_selector},
                **({"serviceSelector": others} if front_doors else {}),
                "interfaces": [f"^{interface}$"],
                "loadBalancerIPs": True,
            },
        )
        cidr = cluster.spec.load_balancer_cidr
        if front_doors:
            first, last = general_range(cidr, front_doors)
            pool = {"blocks": [{"start": str(first), "stop": str(last)}], "serviceSelector": others}
        else:
            pool = {"blocks": [{"cidr": str(cidr)}]}
        api_object(self, "Resource", "cilium.io/v2", "CiliumLoadBalancerIPPool", name, spec=pool)
