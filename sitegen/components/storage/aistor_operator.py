"""`aistor-operator`: the MinIO AIStor operator, which runs the ObjectStore of the `aistor` app."""

from __future__ import annotations

from pydantic import Field

from sitegen.components.base import CRD, RBAC, WEBHOOKS, ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Resources, Values, placed, requests


class Operator(Placed):
    replicas: int
    resources: Resources


class Global(Values):
    operator: Operator


class AIStorOperatorValues(Values):
    # The licence is the `minio-license` Secret written by External Secrets, never a chart value.
    global_: Global = Field(alias="global")


class AIStorOperator(ChartComponent):
    name = "aistor-operator"
    chart = "aistor-operator"
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "aistor-operator"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")
    cluster_kinds = (*RBAC, CRD, *WEBHOOKS)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def values(self, ctx: ClusterContext) -> AIStorOperatorValues:
        return AIStorOperatorValues(
            global_=Global(
                operator=Operator(
                    replicas=2, resources=requests("200m", "256Mi", "1Gi"), **placed(ctx.system_placement)
                )
            )
        )
