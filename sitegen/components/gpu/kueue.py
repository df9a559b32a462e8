"""`kueue`: the job-queueing controller ("job scheduler components" of the seed), on the system pool."""

from __future__ import annotations

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.values import Placed, Resources, Values, placed, requests


class Manager(Values):
    resources: Resources


class ControllerManager(Placed):
    replicas: int
    manager: Manager


class KueueValues(Values):
    controllerManager: ControllerManager


class Kueue(ChartComponent):
    name = "kueue"
    chart = "kueue"
    serves = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "kueue-system"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def values(self, ctx: ClusterContext) -> KueueValues:
        return KueueValues(
            controllerManager=ControllerManager(
                replicas=2,  # leader election; the webhook stays available during a restart
                manager=Manager(resources=requests("500m", "512Mi", "2Gi")),
                **placed(ctx.system_placement),
            )
        )
