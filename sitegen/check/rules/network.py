"""Network rules: default deny in every namespace the site creates and in kube-system, and exactly the
declared flows allowed (each component's Flow declarations, evaluated against the rendered policies)."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import ip_network

from constructs.network_policy import EVERY_NAMESPACE, KUBE_SYSTEM
from sitegen.check.netpol import End, PolicyView
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.components.flows import WORLD
from sitegen.components.networking.network_policies import NetworkPolicies
from sitegen.compose.apps import variant_apps
from sitegen.tree.documents import Document


def _cluster_docs(ctx: Context, variant: str, cluster: str) -> list[Document]:
    return [d for d in ctx.docs if d.variant == variant and d.cluster == cluster and d.area == "apps"]


_NO_DENY = "has no default-deny NetworkPolicy (podSelector {}, Ingress and Egress)"


@rule(
    "NET-001",
    "default-deny",
    "every namespace the site creates, and kube-system, denies all ingress and egress but what its "
    "policy allows",
)
def _default_deny(ctx: Context) -> Iterator[Violation]:
    views: dict[tuple[str, str | None], PolicyView] = {}
    for doc in ctx.docs:
        if doc.kind != "Namespace" or doc.group != "" or doc.area != "apps":
            continue
        key = (doc.variant, doc.cluster)
        if key not in views:
            views[key] = PolicyView(_cluster_docs(ctx, doc.variant, doc.cluster or ""))
            # kube-system is no Namespace of ours: its policy is held where the cluster's others are
            if KUBE_SYSTEM not in views[key].denied:
                yield Violation(doc, "$", f"namespace {KUBE_SYSTEM} {_NO_DENY}")
        if doc.name not in views[key].denied:
            yield Violation(doc, "$", f"namespace {doc.name} {_NO_DENY}")


@rule(
    "NET-002",
    "declared-flows",
    "the policies allow every flow the components declare, and a tenant reaches nothing it did not declare",
)
def _declared_flows(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    for variant, layout in sorted(ctx.layouts.items()):
        apps = variant_apps(ctx.site, layout)
        for cluster_ctx in apps.contexts:
            docs = _cluster_docs(ctx, variant, cluster_ctx.cluster.name)
            anchor = next((d for d in docs if d.kind == "CiliumNetworkPolicy"), None)
            if anchor is None:
                continue
            view = PolicyView(docs)
            namespaces = NetworkPolicies.policed_namespaces(cluster_ctx)
            declared = NetworkPolicies.cluster_flows(cluster_ctx)
            for namespace, flows in sorted(declared.items()):
                for peer, ports in sorted(flows.egress.items()):
                    targets = namespaces if peer.namespace == EVERY_NAMESPACE else [peer.namespace or ""]
                    ends = (
                        [End(entity=peer.entity, name=_covered(n)) for n in peer.names]
                        or [End(entity=WORLD, address=str(ip_network(c)[0])) for c in peer.cidrs]
                        or [End(entity=peer.entity) if peer.entity else End(namespace=t) for t in targets]
                    )
                    for end in ends:
                        for port in sorted(ports) or [None]:
                            if not view.allows(End(namespace=namespace), end, port):
                                yield Violation(
                                    anchor,
                                    "$",
                                    f"{namespace} -> {end}{f':{port}' if port else ''} is declared but not allowed",
                                )
            tenants = [
                c.namespace for c in cluster_ctx.components if not c.talks_to_api and c.security is not None
            ]
            for tenant in tenants:
                reached = {p.namespace for p in declared[tenant].egress if p.namespace}
                for other in namespaces:
                    if other in (tenant, *reached):
                        continue
                    if view.allows(End(namespace=tenant), End(namespace=other)):
                        yield Violation(
                            anchor, "$", f"tenant {tenant} reaches {other}, which it did not declare"
                        )
                if view.allows(End(namespace=tenant), End(entity="kube-apiserver")):
                    yield Violation(anchor, "$", f"tenant {tenant} reaches the API server")
                anywhere = any(p.entity == "world" and not p.names for p in declared[tenant].egress)
                if not anywhere and any(
                    view.allows(End(namespace=tenant), End(entity="world"), port) for port in (None, 443)
                ):
                    yield Violation(
                        anchor,
                        "$",
                        f"tenant {tenant} reaches any address outside, beyond the names it declared",
                    )


def _covered(name: str) -> str:
    """A name a declared DNS name or pattern covers (a `*` of a pattern stands for one label)."""
    return name.replace("*", "x")
