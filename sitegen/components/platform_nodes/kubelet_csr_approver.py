"""`kubelet-csr-approver`: approves the kubelets' serving certificates for the plan's nodes only (see
constructs/csr_approver.py), so that nothing talks to a kubelet without verifying it."""

from __future__ import annotations

from constructs import Construct
from constructs.csr_approver import KubeletCsrApprover as Approver
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform_nodes import PROJECT
from sitegen.components.runtime_needs import ApiCall, RuntimeNeeds

IMAGE = "kubelet-csr-approver"


class KubeletCsrApprover(RenderedComponent):
    name = "kubelet-csr-approver"
    project = PROJECT
    layer = Layer.FOUNDATION
    namespace = "kubelet-csr-approver"
    security = NamespaceSecurity("restricted", "one controller, restricted")
    images = {IMAGE: "approves kubelet serving certificates"}
    after = (Namespaces, Cilium)  # a pod-network controller
    # postfinance/kubelet-csr-approver internal/controller/csr_controller.go (v1.2.14, the newest tag the
    # mirror holds; the pin is v1.2.15): SetupWithManager watches CertificateSigningRequests (For), its
    # marker `groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;watch;list`.
    runtime_needs = RuntimeNeeds(
        api=tuple(
            ApiCall(
                "kubelet-csr-approver", verb, "certificatesigningrequests", "certificates.k8s.io",
                source="kubelet-csr-approver internal/controller/csr_controller.go SetupWithManager",
            )
            for verb in ("list", "watch")
        )
    )  # fmt: skip

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        Approver(
            scope,
            "Approver",
            namespace=self.namespace,
            hosts=[h.name for pool in ctx.cluster.pools for h in pool.hosts],
            node_cidr=str(ctx.site.network.kubernetes.cidr),
            image=ctx.image(IMAGE),
            placement=ctx.system_placement,
        )
