"""`external-secrets`: the controller that writes every credential of the site from the vault."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from constructs.secrets import READER_SERVICE_ACCOUNT
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, ObjectPatch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform import PROJECT
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import READS_SECRETS, RELABELS_NAMESPACES, Reviewed, RoleReview, narrow_rule
from sitegen.components.runtime_needs import VAULT_LOGIN, ApiCall, RuntimeNeeds
from sitegen.components.values import Placed, Resources, placed, requests


class Webhook(Placed):
    replicaCount: int
    resources: Resources


class CertController(Placed):
    resources: Resources


class ExternalSecretsValues(Placed):
    installCRDs: bool = True
    replicaCount: int = 2
    resources: Resources
    webhook: Webhook
    certController: CertController


class ExternalSecrets(ChartComponent):
    name = "external-secrets"
    chart = "external-secrets"
    serves = (
        "external-secrets.io/v1",
        "external-secrets.io/v1alpha1",
        "generators.external-secrets.io/v1alpha1",
    )
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "external-secrets"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")
    # external-secrets v2.9.0: the controller's caches list and watch ExternalSecrets
    # (pkg/controllers/externalsecret/externalsecret_controller.go SetupWithManager, For ExternalSecret),
    # the metadata of Secrets (WatchesMetadata there) and SecretStores
    # (pkg/controllers/secretstore/secretstore_controller.go, For SecretStore); a store's Kubernetes auth
    # asks a token for its serviceAccountRef (providers/v1/vault/auth_kubernetes.go getJwtString ->
    # auth.go createServiceAccountToken, CreateToken); the controller itself calls the vault.
    runtime_needs = RuntimeNeeds(
        api=(
            *(
                ApiCall("external-secrets", verb, resource, group, source=source)
                for resource, group, source in (
                    ("externalsecrets", "external-secrets.io", "externalsecret_controller.go SetupWithManager"),
                    ("secretstores", "external-secrets.io", "secretstore_controller.go SetupWithManager"),
                    ("secrets", "", "externalsecret_controller.go SetupWithManager, WatchesMetadata Secret"),
                )
                for verb in ("list", "watch")
            ),
            ApiCall(
                "external-secrets", "create", "serviceaccounts/token", at=VAULT_LOGIN,
                source="providers/v1/vault/auth.go createServiceAccountToken",
            ),
        ),
        vault=("external-secrets",),
    )  # fmt: skip

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        vault = urlsplit(ctx.site.secrets.vault.server)
        return [Flow(WORLD, (vault.port or 443,), "the site vault")]

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        tokens = {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}
        return [
            narrow_rule(
                "external-secrets-controller",
                8,
                tokens,
                [{**tokens, "resourceNames": [READER_SERVICE_ACCOUNT]}],
                why="every SecretStore logs in to the vault as its namespace's reader account; a token "
                "for any account of any namespace is every namespace's power",
            )
        ]

    def values(self, ctx: ClusterContext) -> ExternalSecretsValues:
        system = placed(ctx.system_placement)
        return ExternalSecretsValues(
            resources=requests("100m", "128Mi", "512Mi"),
            webhook=Webhook(replicaCount=2, resources=requests("50m", "64Mi", "256Mi"), **system),
            certController=CertController(resources=requests("50m", "64Mi", "256Mi"), **system),
            **system,
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "external-secrets-controller": RoleReview(
                (READS_SECRETS,), "writes each ExternalSecret's Secret in its namespace"
            ),
            "external-secrets-cert-controller": RoleReview(
                (READS_SECRETS,), "rotates the webhook's certificate Secret"
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/external-secrets": Reviewed(
                (READS_SECRETS, RELABELS_NAMESPACES),
                "writes every ExternalSecret's target Secret in the ExternalSecret's namespace; the chart grants namespace writes for its cluster-scoped kinds (ClusterExternalSecret), which this site does not use, and its use of them at this version is not verified: left as the chart has it",
            ),
            f"{self.namespace}/external-secrets-cert-controller": Reviewed(
                (READS_SECRETS,),
                "rotates the webhook's serving certificate Secret; the chart binds its reads cluster-wide",
            ),
        }
