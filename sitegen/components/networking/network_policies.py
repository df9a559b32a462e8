"""`network-policies`: default deny in every namespace the site creates, then the flows its
components declare (Component.flows), the ingress those flows imply, the API server's calls to the
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
from constructs.network_policy import NamespacePolicy, Peer
from constructs.objects import WEBHOOK_KINDS
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
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


def _peer(ctx: ClusterContext, flow: Flow) -> Peer:
    if isinstance(flow.to, str):
        if flow.to in (WORLD, NODES):
            return Peer(entity=flow.to, names=flow.names)
        if flow.to == EVERY_NAMESPACE:
            return Peer(namespace=EVERY_NAMESPACE)
        return Peer(namespace=flow.to)
    target = ctx.find(flow.to)
    return Peer(namespace=target.namespace) if target is not None else Peer(entity=WORLD)


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
    def cluster_flows(
        ctx: ClusterContext, rendered: dict[str, list[dict]] | None = None
    ) -> dict[str, NamespaceFlows]:
        """The allowed flows per site namespace of the cluster."""
        names = ctx.site_namespaces()
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
                peer = _peer(ctx, flow)
                own.add(own.egress, peer, flow.ports)
                source = Peer(namespace=component.namespace)
                if peer.namespace == EVERY_NAMESPACE:
                    for other in flows.values():
                        other.add(other.ingress, source, flow.ports)
                elif peer.namespace in flows and peer.namespace != component.namespace:
                    flows[peer.namespace].add(flows[peer.namespace].ingress, source, flow.ports)
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
            )
