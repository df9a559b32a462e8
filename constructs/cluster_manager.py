"""The identity the hub's Argo CD manages a spoke cluster as: a ServiceAccount whose ClusterRole names
exactly the kinds the spoke's Applications render, not cluster-admin.

Its token is a bound service-account token with an expiry (`kubectl create token --duration`), put in
the vault by the RUNBOOK and re-issued there to rotate it. Creating the RBAC the charts ship needs
`bind` and `escalate` on roles (the API server otherwise refuses a binding to permissions the creator
lacks); both are limited by `resourceNames` to the roles the spoke's apps render or bind, so the
account cannot bind `cluster-admin` or grow a role of its own choosing. What the scope buys: no exec,
no port-forward, no write to a kind the site does not deploy, no role beyond the rendered ones, and a
reviewable list in git.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from constructs import Construct
from constructs.objects import account_with_cluster_role

NAME = "argocd-manager"
RBAC = "rbac.authorization.k8s.io/v1"
MANAGE = ["get", "list", "watch", "create", "update", "patch", "delete"]
# What Argo CD reads to show an app's tree and judge health: objects the controllers create.
OBSERVED: Mapping[str, tuple[str, ...]] = {
    "": ("events", "pods"),
    "apps": ("controllerrevisions", "replicasets"),
    "discovery.k8s.io": ("endpointslices",),
}


def resource_of(kind: str) -> str:
    """The resource of a kind, as the API server's RESTMapper guesses it (UnsafeGuessKindToResource):
    lower case, -y to -ies, -s to -ses, else -s. `ClusterManager` checks guesses of custom kinds
    against the CRDs that name them."""
    singular = kind.lower()
    if singular == "endpoints":
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


class ClusterManager(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        managed: Mapping[str, Set[str]],
        roles: Set[str],
    ) -> None:
        """`managed`: API group -> resources the spoke's Applications create; `roles`: the names of the
        (Cluster)Roles they render or bind to, the only ones it may bind or escalate."""
        super().__init__(scope, id)
        rules = [
            {"apiGroups": [group], "resources": sorted(resources), "verbs": MANAGE}
            for group, resources in sorted(managed.items())
        ]
        rules += [
            {"apiGroups": [group], "resources": list(resources), "verbs": ["get", "list", "watch"]}
            for group, resources in OBSERVED.items()
        ]
        rules.append(
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles", "roles"],
                "verbs": ["bind", "escalate"],
                "resourceNames": sorted({*roles, NAME}),  # its own binding included
            }
        )
        account_with_cluster_role(self, NAME, namespace, rules)
