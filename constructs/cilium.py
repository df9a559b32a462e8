"""Cilium resources we own: the load-balancer IP pool of each cluster (LB-IPAM)."""

from __future__ import annotations

from cdk8s import ApiObject, JsonPatch

from constructs import Construct
from sitegen.layout import ClusterLayout


class LoadBalancerPool(Construct):
    def __init__(self, scope: Construct, id: str, *, cluster: ClusterLayout) -> None:
        super().__init__(scope, id)
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
