"""`aistor-operator`: the MinIO AIStor operator, which runs the ObjectStore of the `aistor` app."""

from __future__ import annotations

from pydantic import Field

from constructs.aistor import OBJECT_STORE
from sitegen.components.base import (
    ChartComponent,
    Flow,
    Layer,
    NamespaceSecurity,
    ObjectPatch,
    placement_patch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.ownership import WrittenField
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
    serves = ("aistor.min.io/v1", "aistor.min.io/v1alpha1", "sts.min.io/v1alpha1", "sts.min.io/v1beta1")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "aistor-operator"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")
    writes = (
        WrittenField(
            "admissionregistration.k8s.io", "MutatingWebhookConfiguration", "/webhooks/*/clientConfig/caBundle",
            names=("object-store-operator-webhook",),
            why="the operator injects its webhook's CA at start [inferred: the webhook's Deployment mounts "
            "no certificate and the operator's ClusterRole may update mutatingwebhookconfigurations; the "
            "chart renders the field empty]",
        ),
    )  # fmt: skip

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(OBJECT_STORE, (), "the ObjectStore's admin API (its namespace)")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            placement_patch(
                "Deployment",
                "object-store-webhook",
                ctx.system_placement,
                why="the chart places the webhook by affinity only: no toleration for a tainted system pool",
            )
        ]

    def values(self, ctx: ClusterContext) -> AIStorOperatorValues:
        return AIStorOperatorValues(
            global_=Global(
                operator=Operator(
                    replicas=2, resources=requests("200m", "256Mi", "1Gi"), **placed(ctx.system_placement)
                )
            )
        )
