"""`secret-store`: a SecretStore per namespace that reads the site vault, each as its own vault role,
and the binding that lets each reader have its login token reviewed.

The namespaces are those whose objects the cluster's other apps render ExternalSecrets into (and, on
the hub, Argo CD's, for the root's repository and spoke credentials): computed, never listed.
"""

from __future__ import annotations

from constructs import Construct
from constructs.secrets import SecretStore as VaultStore
from constructs.secrets import TokenReviewers
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform import PROJECT
from sitegen.components.platform.external_secrets import ExternalSecrets


class SecretStore(RenderedComponent):
    name = "secret-store"
    project = PROJECT
    layer = Layer.RESOURCES
    skip_dry_run = True
    after = (ExternalSecrets,)
    reads_rendered = True

    def namespaces(self, ctx: ClusterContext) -> list[str]:
        found = {
            doc["metadata"]["namespace"]
            for docs in ctx.rendered.values()
            for doc in docs
            if doc.get("kind") == "ExternalSecret"
        }
        if ctx.is_hub:
            found.add(ctx.site.gitops.argocd.namespace)  # the root's ExternalSecrets
        return sorted(found)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        namespaces = self.namespaces(ctx)
        TokenReviewers(scope, "TokenReviewers", namespaces=namespaces)
        for namespace in namespaces:
            VaultStore(
                scope,
                f"Store-{namespace}",
                secrets=ctx.site.secrets,
                cluster=ctx.cluster.name,
                namespace=namespace,
                api_audience=ctx.cluster.spec.api_audience,
            )
