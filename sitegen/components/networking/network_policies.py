"""`network-policies`: default deny in every namespace the site creates and in kube-system, then the
flows its components declare (Component.flows), the ingress those flows imply, the API server's calls to the
webhooks the apps render, and the outside world into what is exposed.

A plain NetworkPolicy denies everything (ingress and egress) in the namespace; one
CiliumNetworkPolicy allows the flows, with Cilium's entities where NetworkPolicy has no words
(kube-apiserver, world, the nodes). `network.kubernetes.network_policy: audit` has Cilium log what
would be dropped instead of dropping it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from constructs import Construct
from constructs.network_policy import KUBE_SYSTEM, NamespacePolicy, Peer
from constructs.objects import WEBHOOK_KINDS
from sitegen.components.base import Component, Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import EVERY_NAMESPACE, NODES, WORLD, Flow
from sitegen.components.networking import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.tree.fields import dig


@dataclass
class NamespaceFlows:
    """Everything one namespace's policy allows, with the reasons."""

    api: bool = False
    egress: dict[Peer, set[int]] = field(default_factory=dict)  # peer -> ports (empty: any)
    ingress: dict[Peer, set[int]] = field(default_factory=dict)

    def add(self, side: dict[Peer, set[int]], peer: Peer, ports: Iterable[int]) -> None:
        ports = set(ports)
        if peer in side and (not side[peer] or not ports):
            side[peer] = set()  # any port wins
        else:
            side.setdefault(peer, set()).update(ports)


def _target(ctx: ClusterContext, flow: Flow) -> tuple[Peer, tuple[int, ...]] | None:
    """Where a flow goes and on which ports; None for a component the variant does not run."""
    if isinstance(flow.to, str):
        if flow.to in (WORLD, NODES):
            return Peer(entity=flow.to, names=flow.names), flow.ports
        return Peer(namespace=flow.to), flow.ports  # a namespace, or EVERY_NAMESPACE
    target = ctx.find(flow.to)
    if target is not None:
        return Peer(namespace=target.namespace), flow.ports
    for cluster in ctx.variant.clusters:  # another cluster's: its addresses there, never the world
        remote = next(
            (c for c in ctx.variant_components.get(cluster.name, ()) if isinstance(c, flow.to)), None
        )
        if isinstance(remote, Component):
            access = remote.remote_access(ClusterScope(ctx.site, ctx.variant, cluster))
            if access is None:
                raise ValueError(f"{remote.name} of {cluster.name} declares no remote_access: {flow.why}")
            return Peer(cidrs=access.cidrs), access.ports
    return None


def _webhook_backends(doc: dict) -> list[str]:
    """Namespaces of the Services the API server calls: webhooks and aggregated APIs. Any port: a
    Service's port maps to a pod port the configuration does not say."""
    if doc.get("kind") not in WEBHOOK_KINDS:
        return []
    if doc["kind"] == "APIService":
        services = [dig(doc, "spec", "service")]
    else:
        services = [dig(hook, "clientConfig", "service") for hook in doc.get("webhooks") or []]
    return [s["namespace"] for s in services if s]


class NetworkPolicies(RenderedComponent):
    name = "network-policies"
    project = PROJECT
    layer = Layer.RESOURCES
    skip_dry_run = True  # CiliumNetworkPolicy is registered by the Cilium operator at run time
    after = (Cilium, Namespaces)
    reads_rendered = True  # the webhooks the apps render

    @staticmethod
    def policed_namespaces(ctx: ClusterContext) -> list[str]:
        """The namespaces the policies deny in: the site's, and kube-system (Pod Security does not guard
        it, and its pods serve every namespace: DNS, metrics, Hubble)."""
        return sorted({*ctx.site_namespaces(), KUBE_SYSTEM})

    @staticmethod
    def cluster_flows(
        ctx: ClusterContext, rendered: dict[str, list[dict]] | None = None
    ) -> dict[str, NamespaceFlows]:
        """The allowed flows per namespace the policies deny in (`policed_namespaces`)."""
        names = NetworkPolicies.policed_namespaces(ctx)
        flows = {ns: NamespaceFlows() for ns in names}
        for component in ctx.components:
            own = flows.get(component.namespace)
            if own is None:
                continue
            own.api |= component.talks_to_api
            if component.exposed:
                own.add(own.ingress, Peer(entity=WORLD), ())
                own.add(own.ingress, Peer(entity=NODES), ())
            for flow in component.flows(ctx):
                found = _target(ctx, flow)
                if found is None:
                    continue
                peer, ports = found
                own.add(own.egress, peer, ports)
                source = Peer(namespace=component.namespace)
                if peer.namespace == EVERY_NAMESPACE:
                    for other in flows.values():
                        other.add(other.ingress, source, ports)
                elif peer.namespace in flows and peer.namespace != component.namespace:
                    flows[peer.namespace].add(flows[peer.namespace].ingress, source, ports)
        for docs in (rendered or {}).values():
            for doc in docs:
                for namespace in _webhook_backends(doc):
                    if namespace in flows:
                        flows[namespace].add(flows[namespace].ingress, Peer(entity="kube-apiserver"), ())
        return flows

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        flows_by_namespace = self.cluster_flows(ctx, dict(ctx.rendered))
        for docs in ctx.rendered.values():  # namespaces the charts create (Cilium's secrets namespace)
            for doc in docs:
                if doc.get("kind") == "Namespace":
                    flows_by_namespace.setdefault(doc["metadata"]["name"], NamespaceFlows())
        for namespace, flows in sorted(flows_by_namespace.items()):
            NamespacePolicy(
                scope,
                f"Policy-{namespace}",
                namespace=namespace,
                api=flows.api,
                egress=flows.egress,
                ingress=flows.ingress,
                serves_dns=namespace == KUBE_SYSTEM,
            )
