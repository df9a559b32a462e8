"""One node pool of a cluster: a Node manifest per host, and the placement other constructs use."""

from __future__ import annotations

from cdk8s_plus_27 import k8s

from constructs import Construct
from constructs.objects import PARTIAL_OBJECT
from sitegen.model import Placement, PoolLayout

# A kubelet may not set node-role.kubernetes.io/* on itself (NodeRestriction), so Argo CD applies
# the labels server-side as partial Nodes. It must never prune or delete a Node. Taints are left to
# kubeadm registration: an applied `spec.taints` list would be owned whole and erase the taints
# the node lifecycle controller adds (unreachable, not-ready).


class NodePool(Construct):
    """The Node manifests of one pool, each carrying exactly the pool's labels."""

    def __init__(self, scope: Construct, id: str, *, pool: PoolLayout) -> None:
        super().__init__(scope, id)
        self.pool = pool
        for host in pool.hosts:
            k8s.KubeNode(
                self,
                host.name,
                metadata=k8s.ObjectMeta(
                    name=host.name,
                    labels=pool.labels,
                    annotations=PARTIAL_OBJECT,
                ),
            )

    @property
    def placement(self) -> Placement:
        return self.pool.placement
