"""`aistor-operator`: the MinIO AIStor operator, which runs the ObjectStore of the `aistor` app."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from constructs.aistor import OBJECT_STORE
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, ObjectPatch, placement_patch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.ownership import WrittenField
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    GRANTS_ANY_ROLE,
    MAKES_PRIVILEGED_PODS,
    READS_SECRETS,
    Reviewed,
    RoleReview,
    narrow_rule,
)
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Resources, Values, placed, requests

SIGNERS = {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "verbs": ["approve"]}
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
WEBHOOK_CONFIGURATION = "object-store-operator-webhook"
WEBHOOK_CONFIGURATIONS = {
    "apiGroups": ["admissionregistration.k8s.io"],
    "resources": ["mutatingwebhookconfigurations"],
    "verbs": ["get", "update"],
}


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
            ),
            narrow_rule(
                "aistor-certificate-management",
                3,
                SIGNERS,
                [{**SIGNERS, "resourceNames": [KUBELET_SERVING]}],
                why="the operator signs its TLS through kubelet-serving CSRs only; approval for any signer "
                "is one cluster-admin client certificate away",
            ),
            narrow_rule(
                "aistor-object-store-webhook-cluster",
                0,
                WEBHOOK_CONFIGURATIONS,
                [{**WEBHOOK_CONFIGURATIONS, "resourceNames": [WEBHOOK_CONFIGURATION]}],
                why="the webhook writes the caBundle of its own configuration, not every webhook's",
            ),
        ]

    def values(self, ctx: ClusterContext) -> AIStorOperatorValues:
        return AIStorOperatorValues(
            global_=Global(
                operator=Operator(
                    replicas=2, resources=requests("200m", "256Mi", "1Gi"), **placed(ctx.system_placement)
                )
            )
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "aistor-adminjob": RoleReview(
                (READS_SECRETS,), "the AIStor operator's admin jobs read each store's credentials"
            ),
            "aistor-object-store": RoleReview(
                (
                    READS_SECRETS,
                    GRANTS_ANY_ROLE,
                ),
                "the AIStor operator writes and reads its stores' credentials and certificates, and binds its pods' and its TokenReview roles only (resourceNames)",
            ),
            "aistor-object-store-pods": RoleReview(
                (READS_SECRETS,),
                "bound in each store's namespace by the operator (RoleBinding): its pods read their configuration Secret",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/adminjob": Reviewed(
                (READS_SECRETS, MAKES_PRIVILEGED_PODS),
                "AIStor's admin-job controller runs the Jobs an ObjectStore asks for and reads their credentials in the ObjectStore's namespace; the chart binds it cluster-wide (no namespaced mode in this release)",
            ),
            f"{self.namespace}/object-store": Reviewed(
                (READS_SECRETS, MAKES_PRIVILEGED_PODS),
                "the operator makes each ObjectStore's StatefulSets and reads its credential and TLS Secrets wherever one lives; the chart binds it cluster-wide (no namespaced mode in this release)",
            ),
        }
