"""`snapshot-controller`: the CSI snapshot controller and the VolumeSnapshot CRDs, which Kubernetes does
not ship; without them no CSI driver takes a snapshot (PowerScale's VolumeSnapshotClass, backups)."""

from __future__ import annotations

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.storage import PROJECT
from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.components.values import (
    Placed,
    PodSecurityContext,
    Resources,
    RestrictedContainer,
    Values,
    placed,
    requests,
)


class SecurityContext(RestrictedContainer):
    """The chart's default (non-root, read-only root) plus what `restricted` also asks for."""

    runAsNonRoot: bool = True
    runAsUser: int = 1000


class MinAvailable(Values):
    minAvailable: int = 1


class ServiceMonitor(Values):
    create: bool


class Controller(Placed):
    replicaCount: int
    resources: Resources
    pdb: MinAvailable = MinAvailable()
    serviceMonitor: ServiceMonitor = ServiceMonitor(create=True)
    podSecurityContext: PodSecurityContext = PodSecurityContext()
    securityContext: SecurityContext = SecurityContext()


class SnapshotControllerValues(Values):
    installCRDs: bool = True
    controller: Controller


class SnapshotController(ChartComponent):
    name = "snapshot-controller"
    chart = "snapshot-controller"
    serves = (
        "groupsnapshot.storage.k8s.io/v1",
        "groupsnapshot.storage.k8s.io/v1beta1",
        "groupsnapshot.storage.k8s.io/v1beta2",
        "snapshot.storage.k8s.io/v1",
    )
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces, KubePrometheusStack)  # its ServiceMonitor
    namespace = "snapshot-controller"
    security = NamespaceSecurity("restricted", "the controller runs restricted")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return CsiIsilon.applies(scope)  # the cluster's CSI driver that takes snapshots

    def values(self, ctx: ClusterContext) -> SnapshotControllerValues:
        return SnapshotControllerValues(
            controller=Controller(
                replicaCount=2,  # leader election
                resources=requests("20m", "64Mi", "256Mi"),
                **placed(ctx.system_placement),
            )
        )
