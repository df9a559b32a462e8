"""`argocd-manager`: on each spoke, the identity the hub's Argo CD manages it as, scoped to the kinds
the spoke's Applications render (see constructs/cluster_manager.py). The RUNBOOK applies it and puts
an expiring token of it in the vault before the spoke is registered; from then on Argo CD keeps it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from constructs import Construct
from constructs.cluster_manager import NAME as SPOKE_MANAGER
from constructs.cluster_manager import ClusterManager, resource_of
from constructs.site_watches import SpokeTokenWatch, Watch
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.platform import PROJECT
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    GRANTS_ANY_ROLE,
    MAKES_PRIVILEGED_PODS,
    READS_SECRETS,
    RELABELS_NAMESPACES,
    REWRITES_ADMISSION,
    UPDATES_CRDS,
    Reviewed,
    RoleReview,
)


class ArgocdManager(RenderedComponent):
    name = "argocd-manager"
    project = PROJECT
    layer = Layer.FOUNDATION
    namespace = "argocd-manager"
    security = NamespaceSecurity("restricted", "a service account, no pods")
    after = (Namespaces,)
    reads_rendered = True  # the kinds every other app of the spoke renders
    reads_readers = True  # the stores and network policies among them
    talks_to_api = False

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return not scope.is_hub

    def watches(self, scope: ClusterScope) -> list[Watch]:
        # the token the RUNBOOK issues for Argo CD to reach this spoke
        return [SpokeTokenWatch(scope.site.gitops.argocd.spoke_token_days)]

    def managed(self, ctx: ClusterContext) -> dict[str, set[str]]:
        """API group -> resources of every object the spoke's apps render, its own included."""
        docs = [d for docs in ctx.rendered.values() for d in docs]
        crds = {d["metadata"]["name"] for d in docs if d.get("kind") == "CustomResourceDefinition"}
        custom_groups = {name.partition(".")[2] for name in crds}
        managed: dict[str, set[str]] = defaultdict(set)
        own = (("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "ClusterRole"),
               ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"))  # fmt: skip
        for api_version, kind in [*((d["apiVersion"], d["kind"]) for d in docs), *own]:
            group = api_version.rpartition("/")[0]
            resource = resource_of(kind)
            if group in custom_groups and f"{resource}.{group}" not in crds:
                raise ValueError(f"{kind}.{group}: no CRD {resource}.{group} among the spoke's apps")
            managed[group].add(resource)
        return managed

    def roles(self, ctx: ClusterContext) -> set[str]:
        """The (Cluster)Roles the spoke's apps render, and those their bindings refer to."""
        docs = [d for docs in ctx.rendered.values() for d in docs]
        rendered = {d["metadata"]["name"] for d in docs if d.get("kind") in ("ClusterRole", "Role")}
        bound = {
            d["roleRef"]["name"]
            for d in docs
            if d.get("kind") in ("ClusterRoleBinding", "RoleBinding") and "roleRef" in d
        }
        return rendered | bound

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        ClusterManager(
            scope, "Manager", namespace=self.namespace, managed=self.managed(ctx), roles=self.roles(ctx)
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            SPOKE_MANAGER: RoleReview(
                (
                    READS_SECRETS,
                    GRANTS_ANY_ROLE,
                ),
                "a spoke's Argo CD: applies and compares its apps' objects, their Secrets included; binds and escalates on the roles its apps render only (resourceNames)",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/argocd-manager": Reviewed(
                (
                    READS_SECRETS,
                    MAKES_PRIVILEGED_PODS,
                    REWRITES_ADMISSION,
                    GRANTS_ANY_ROLE,
                    RELABELS_NAMESPACES,
                    UPDATES_CRDS,
                ),
                "Argo CD's deployer on the spoke applies every kind the spoke's apps render: admission policies, CRDs, Namespaces and the bindings among them; its token lives in the vault only and expires (the RUNBOOK's credential step)",
            ),
        }
