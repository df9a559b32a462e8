"""`namespaces`: the namespace of every component that declares one, with its Pod Security labels and,
where the component sets one, its ResourceQuota."""

from __future__ import annotations

from constructs import Construct
from constructs.kueue import MANAGED_NAMESPACE_LABEL, TENANT_PRIORITY_LABEL
from constructs.namespaces import AppNamespace, NamespaceQuota
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform import PROJECT


class Namespaces(RenderedComponent):
    name = "namespaces"
    project = PROJECT
    layer = Layer.FOUNDATION

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        minor = ctx.site.versions.kubernetes_minor
        for component in ctx.components:
            if component.security is not None:
                labels = {MANAGED_NAMESPACE_LABEL: "true"} if component.queued else {}
                priority = component.priority_ceiling(ctx)
                if priority is not None:
                    labels[TENANT_PRIORITY_LABEL] = priority
                AppNamespace(
                    scope,
                    component.namespace,
                    name=component.namespace,
                    level=component.security.level,
                    kubernetes_minor=minor,
                    labels=labels or None,
                    allowed_tolerations=component.allowed_tolerations(ctx),
                )
                quota = component.namespace_quota(ctx)
                if quota is not None:  # before any pod: a quota does not evict what it finds
                    NamespaceQuota(
                        scope, f"{component.namespace}-quota", namespace=component.namespace, quota=quota
                    )
