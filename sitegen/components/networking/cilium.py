"""`cilium`: the primary CNI of every cluster, with kube-proxy replacement and Hubble."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from constructs.argocd import FIELD_MANAGER
from constructs.namespaces import psa_labels
from constructs.site_watches import PolicyAuditWatch, Watch
from sitegen.components.base import EVERY_POOL, ChartComponent, Layer, NodeAgent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import NODES, Flow
from sitegen.components.networking import PROJECT
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.ownership import JobSecret
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    CHANGES_NODES,
    MAKES_PRIVILEGED_PODS,
    READS_SECRETS,
    Reviewed,
    RoleReview,
)
from sitegen.components.values import (
    EVERY_TAINT,
    NOT_READY,
    OFF,
    ON,
    Placed,
    Resources,
    Toggle,
    Toleration,
    Values,
    placed,
    requests,
)
from sitegen.model import paths


class CiliumCluster(Values):
    name: str
    id: int = Field(ge=1, le=255)


class CiliumIpamOperator(Values):
    clusterPoolIPv4PodCIDRList: list[str]
    clusterPoolIPv4MaskSize: int = Field(ge=16, le=28)


class CiliumIpam(Values):
    mode: Literal["cluster-pool"] = "cluster-pool"
    operator: CiliumIpamOperator


class CiliumPlacedComponent(Placed):
    enabled: bool | None = None
    replicas: int | None = None
    resources: Resources
    prometheus: Toggle | None = None


class CiliumHubbleTlsAuto(Values):
    # helm-generated certificates differ on every render; Argo CD would never converge
    method: Literal["helm", "certmanager", "cronJob"] = "cronJob"


class CiliumHubbleTls(Values):
    auto: CiliumHubbleTlsAuto = CiliumHubbleTlsAuto()


class CiliumHubbleMetrics(Values):
    enabled: list[str]


class UiContainer(Values):
    resources: Resources


class CiliumHubbleUi(Placed):
    enabled: bool = True
    frontend: UiContainer
    backend: UiContainer


class Certgen(Placed):
    """The Job and CronJob that issue Hubble's certificates (`hubble.tls.auto.method: cronJob`)."""

    resources: Resources


class CiliumHubble(Values):
    enabled: bool = True
    metrics: CiliumHubbleMetrics
    relay: CiliumPlacedComponent
    ui: CiliumHubbleUi
    tls: CiliumHubbleTls = CiliumHubbleTls()


class Bpf(Values):
    masquerade: bool


class Cni(Values):
    exclusive: bool


class CiliumValues(Values):
    cluster: CiliumCluster
    k8sServiceHost: str
    k8sServicePort: int
    kubeProxyReplacement: bool = True
    routingMode: Literal["native", "tunnel"] = "native"
    ipv4NativeRoutingCIDR: str
    # Nodes share the 100GbE L2 segment, so each installs direct routes to the others' pod CIDRs.
    autoDirectNodeRoutes: bool = True
    enableIPv4Masquerade: bool = True
    bpf: Bpf = Bpf(masquerade=True)
    ipam: CiliumIpam
    # Only the Ethernet bond: IPoIB rail devices must never carry the primary network.
    devices: list[str]
    # Multus chains the RDMA rails after Cilium; an exclusive CNI would delete its config.
    cni: Cni = Cni(exclusive=False)
    l2announcements: Toggle = ON
    gatewayAPI: Toggle = OFF
    prometheus: Toggle = ON
    resources: Resources
    # The agent is a node agent: it must run on every node, whatever the taint.
    tolerations: list[Toleration] = EVERY_TAINT
    operator: CiliumPlacedComponent
    hubble: CiliumHubble
    certgen: Certgen
    # The namespace the chart creates for TLS secrets holds no pods: the strictest level.
    secretsNamespaceLabels: dict[str, str]
    # network.kubernetes.network_policy: audit logs what the policies would drop instead of dropping it
    policyAuditMode: bool


def _audits(scope: ClusterScope) -> bool:
    """Whether config asks Cilium to only log what the network policies would drop."""
    return scope.site.network.kubernetes.network_policy == "audit"


# Where each agent's Hubble server answers Hubble Relay, on the host network (the chart's
# hubble.listenAddress, cilium-config `hubble-listen-address`; Relay finds it through `hubble-peer`).
HUBBLE_SERVER_PORT = 4244


class Cilium(ChartComponent):
    name = "cilium"
    job_secrets = (
        JobSecret(
            "hubble-relay-client-certs",
            "hubble-generate-certs",
            "Cilium's certgen writes Hubble's certificates",
        ),
    )
    chart = "cilium"
    serves_at_runtime = ("cilium.io/v2", "cilium.io/v2alpha1")  # the operator registers its CRDs
    project = PROJECT
    layer = Layer.FOUNDATION
    # the operator selects the system pool by its role label: the RUNBOOK labels nodes before the CNI
    after = (Namespaces,)

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [PolicyAuditWatch()] if _audits(scope) else []

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(NODES, (HUBBLE_SERVER_PORT,), "Hubble Relay reads every agent's Hubble server")]

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        app_dir = paths.in_repo(paths.cluster_apps_dir(scope.variant.name, scope.cluster.name))
        body = f"""
No pod, Argo CD included, starts before the CNI. The folder holds every object of the chart at its
pinned version, rendered with the generated values; no Helm is needed here. The field manager is Argo
CD's, so its Application adopts the objects without conflicts.

```sh
kubectl apply --server-side --field-manager={FIELD_MANAGER} -n {self.namespace} -f {app_dir}/{self.name}/
kubectl wait --for=condition=Ready --timeout=15m nodes --all
```
"""
        return [OperatorStep(Stage.POD_NETWORK, "Primary CNI: Cilium, rendered from its chart", body)]

    def bootstrap_critical(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            self.object_key(
                "Deployment", "cilium-operator"
            ): "hands the agents their pod CIDRs (cluster-pool "
            "IPAM): until it runs no agent is ready, so no node is"
        }

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        every = frozenset({EVERY_POOL})
        return {
            self.object_key("DaemonSet", "cilium"): NodeAgent(
                every, "the CNI agent: no pod networking without it"
            ),
            self.object_key("DaemonSet", "cilium-envoy"): NodeAgent(
                every, "the L7 proxy beside every CNI agent"
            ),
        }

    def values(self, ctx: ClusterContext) -> CiliumValues:
        spec = ctx.cluster.spec
        system = placed(ctx.system_placement)
        return CiliumValues(
            policyAuditMode=_audits(ctx),
            cluster=CiliumCluster(name=ctx.cluster.name, id=spec.id),
            # The VIP, not the DNS name: the agent must reach the API before cluster DNS exists.
            k8sServiceHost=str(spec.api.vip),
            k8sServicePort=spec.api.port,
            ipv4NativeRoutingCIDR=str(spec.pod_cidr),
            ipam=CiliumIpam(
                operator=CiliumIpamOperator(
                    clusterPoolIPv4PodCIDRList=[str(spec.pod_cidr)],
                    clusterPoolIPv4MaskSize=spec.pod_cidr_node_mask,
                )
            ),
            devices=[ctx.site.network.kubernetes.interface],
            resources=requests("200m", "512Mi"),
            operator=CiliumPlacedComponent(
                replicas=2,
                resources=requests("100m", "256Mi"),
                prometheus=ON,
                **{**system, "tolerations": [*system["tolerations"], NOT_READY]},  # see bootstrap_critical
            ),
            hubble=CiliumHubble(
                metrics=CiliumHubbleMetrics(
                    enabled=["dns", "drop", "tcp", "flow", "port-distribution", "icmp"]
                ),
                relay=CiliumPlacedComponent(enabled=True, resources=requests("100m", "128Mi"), **system),
                ui=CiliumHubbleUi(
                    frontend=UiContainer(resources=requests("20m", "32Mi")),
                    backend=UiContainer(resources=requests("50m", "64Mi")),
                    **system,
                ),
            ),
            certgen=Certgen(resources=requests("10m", "32Mi"), **system),
            secretsNamespaceLabels=psa_labels("restricted", ctx.site.versions.kubernetes_minor),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "cilium-operator": RoleReview(
                (READS_SECRETS,),
                "Cilium's TLS Secrets (Hubble, ingress and Gateway listeners) in any namespace",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/cilium-operator": Reviewed(
                (READS_SECRETS, CHANGES_NODES, MAKES_PRIVILEGED_PODS),
                "manages the Cilium identities, node annotations (IPAM) and the TLS Secrets of Hubble and the mesh; runs in kube-system as the CNI's operator",
            ),
        }
