"""`harbor-config`: Harbor's credentials from the vault and its proxy-cache projects (a Sync-hook Job)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from constructs import Construct
from constructs.certificate_rollover import CertificateRollover, Rolled
from constructs.registry import PULL_SECRET_KEY, ProxyCacheProjects
from constructs.secrets import VaultSecret
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.gateway import Gateway
from sitegen.components.flows import Flow
from sitegen.components.observability.telemetry import SITE_CA_KEY, SITE_CA_SECRET, site_ca_certificate
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.registry import PROJECT
from sitegen.components.registry.harbor import (
    ADMIN,
    OIDC_SECRET,
    OIDC_VAULT_KEY,
    OVERWRITE_ENV,
    PULL_SECRET,
    TLS_SECRET,
    Harbor,
    vault_copies,
)
from sitegen.components.storage.aistor import ca_secret as aistor_ca
from sitegen.model import Site

# The chart's nginx (`<fullname>-nginx`): it reads its key pair at start and never again, so a renewal
# reaches it only through a new pod (a CertificateRollover)
NGINX = "harbor-nginx"


class HarborConfig(RenderedComponent):
    name = "harbor-config"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (SecretStore,)
    before = (Harbor,)  # Harbor reads the credentials written here
    namespace = Harbor.namespace
    skip_dry_run = True
    images = {"curl": "Harbor's proxy-cache projects; nginx rolled when its certificate renews"}
    # The nodes' pull robot's secret (constructs/registry.py): set by the setup Job, written into every
    # host's hosts.toml by the RUNBOOK.
    pull_vault_key = "harbor/node-pull"

    @staticmethod
    def oidc_settings(site: Site) -> dict[str, object]:
        """Harbor's OIDC settings (its configuration API's names): the site's provider and groups, members
        made on first login, Harbor's admins the group Argo CD makes admin; the client secret is a template
        field the ExternalSecret fills from the vault."""
        sso = site.gitops.argocd.sso
        admins = sorted(group for group, role in site.gitops.argocd.rbac.items() if role == "admin")
        return {
            "auth_mode": "oidc_auth",
            "primary_auth_mode": True,
            "oidc_name": "site",
            "oidc_endpoint": sso.issuer,
            "oidc_client_id": site.services.registry.sso_client_id,
            "oidc_client_secret": "{{ .client_secret }}",
            "oidc_scope": f"openid,profile,email,{sso.groups_claim}",
            "oidc_groups_claim": sso.groups_claim,
            "oidc_admin_group": admins[0],
            "oidc_user_claim": "preferred_username",
            "oidc_auto_onboard": True,
            "oidc_verify_cert": True,
        }

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return Harbor.applies(scope)

    def reloads_certificates(self, scope: ClusterScope) -> Mapping[str, str]:
        # Harbor's core mounts TLS_SECRET too, for its ca.crt alone (the portal's CA download)
        why = "reads only the ca.crt of its certificate's Secret: the issuing CA, which a renewal keeps"
        return {self.object_key("Deployment", "harbor-core"): why}  # the same namespace

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(Gateway, (), "the setup Job calls Harbor's API at its public name, over HTTPS")]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        storage = ctx.site.services.registry.storage
        for copy in vault_copies(storage):
            VaultSecret(
                scope,
                copy.name,
                name=copy.name,
                namespace=self.namespace,
                store=ctx.store,
                key=copy.vault_key,
                properties=sorted(set(copy.keys.values())),
                template=copy.template(),
            )
        VaultSecret(
            scope, "Oidc", name=OIDC_SECRET, namespace=self.namespace, store=ctx.store, key=OIDC_VAULT_KEY,
            properties=["client_secret"],
            template={OVERWRITE_ENV: json.dumps(self.oidc_settings(ctx.site), sort_keys=True)},
        )  # fmt: skip
        if storage == "aistor":
            aistor_ca(scope, namespace=self.namespace, store=ctx.store)
        VaultSecret(
            scope, "PullRobot", name=PULL_SECRET, namespace=self.namespace, store=ctx.store,
            key=self.pull_vault_key, properties=[PULL_SECRET_KEY],
        )  # fmt: skip
        ca = None
        if ctx.site.services.certificates.internal_ca:  # the certificate only, never the key
            site_ca_certificate(self.namespace).render(scope, ctx.store)
            ca = (SITE_CA_SECRET, SITE_CA_KEY)
        if ctx.site.services.certificates.internal_ca:  # nginx serves the Gateway TLS_SECRET's pair
            CertificateRollover(
                scope, "Rollover", namespace=self.namespace, rolled=[Rolled(TLS_SECRET, "Deployment", NGINX)],
                image=ctx.image("curl"), placement=ctx.system_placement,
            )  # fmt: skip
        ProxyCacheProjects(
            scope,
            "ProxyCaches",
            registry=ctx.site.services.registry,
            namespace=self.namespace,
            # over HTTPS to the Gateway, as every client of Harbor (Gateway to Harbor: in-cluster HTTP)
            api=f"https://{ctx.site.services.registry.hostname}/api/v2.0",
            image=ctx.image("curl"),
            placement=ctx.system_placement,
            admin_secret=ADMIN.name,
            pull_secret=PULL_SECRET,
            ca=ca,
        )
