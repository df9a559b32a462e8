"""An app of config/extensions.yaml: its objects as written, in its own restricted namespace. Nothing
here is trusted more than a tenant: no pool, no flows (default deny), and `validate` judges every object
by the same rules as the generator's own."""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.objects import api_object
from sitegen.components.base import Component, Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.extensions import PROJECT
from sitegen.model.extensions import is_cluster_scoped


class ExtraApp(RenderedComponent):
    name = "extra"
    project = PROJECT
    layer = Layer.TENANTS
    security = NamespaceSecurity("restricted", "objects config/extensions.yaml adds: nothing runs privileged")
    talks_to_api = False
    skip_dry_run = True  # its objects may be custom resources of a CRD another app installs

    def __init__(self, app: str, namespace: str) -> None:
        self.app = app
        self.name = app
        self.namespace = namespace

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        apps = scope.site.extensions.apps
        return [
            cls(name, app.namespace)
            for name, app in sorted(apps.items())
            if app.cluster == scope.cluster.name
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        for i, obj in enumerate(ctx.site.extensions.apps[self.app].objects):
            body: dict[str, Any] = {
                k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")
            }
            metadata = (
                obj["metadata"]
                if is_cluster_scoped(obj)
                else {**obj["metadata"], "namespace": self.namespace}
            )
            api_object(scope, f"object-{i}", obj["apiVersion"], obj["kind"], metadata, **body)
