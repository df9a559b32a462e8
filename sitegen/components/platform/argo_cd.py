"""`argo-cd`: Argo CD on the hub's system pool, managing every cluster of the variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import yaml
from pydantic import ConfigDict, Field, model_validator

from constructs.edge import Backend, Route
from sitegen.components.base import ChartComponent, Component, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.ownership import JobSecret
from sitegen.components.platform import PROJECT
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    CHANGES_NODES,
    EVERYTHING,
    GRANTS_ANY_ROLE,
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    READS_SECRETS,
    RELABELS_NAMESPACES,
    REWRITES_ADMISSION,
    UPDATES_CRDS,
    Reviewed,
    RoleReview,
)
from sitegen.components.values import (
    OFF,
    Image,
    Pdb,
    Placed,
    Resources,
    Toggle,
    Values,
    image,
    placed,
    requests,
)
from sitegen.model.gitops import Sso

# the usual object names (argocd-server, ...), which the HTTPRoute and runbook name
FULLNAME = "argocd"
SERVER_SERVICE = f"{FULLNAME}-server"
SERVER_TLS_SECRET = "argocd-server-tls"  # the name argocd-server loads its key pair from

# Argo CD's own default exclusions (3.x) plus high-churn objects of this site's operators. Setting
# the key replaces the defaults, so they are repeated here.
_EXCLUSIONS = [
    {"apiGroups": ["", "discovery.k8s.io"], "kinds": ["Endpoints", "EndpointSlice"]},
    {"apiGroups": ["coordination.k8s.io"], "kinds": ["Lease"]},
    {
        "apiGroups": ["authentication.k8s.io", "authorization.k8s.io"],
        "kinds": [
            "SelfSubjectReview",
            "TokenReview",
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
            "SubjectAccessReview",
        ],
    },
    {"apiGroups": ["certificates.k8s.io"], "kinds": ["CertificateSigningRequest"]},
    {"apiGroups": ["cert-manager.io"], "kinds": ["CertificateRequest"]},
    {"apiGroups": ["cilium.io"], "kinds": ["CiliumIdentity", "CiliumEndpoint", "CiliumEndpointSlice"]},
    {"apiGroups": ["nfd.k8s-sigs.io"], "kinds": ["NodeFeature"]},
    {"apiGroups": ["kueue.x-k8s.io"], "kinds": ["Workload"]},
]

# Application health was removed in Argo CD 1.8; restoring it is what makes the root's sync waves wait
# on the Applications in them. Healthy counts only once synced: a fresh Application whose objects are
# not applied yet must not release the next wave.
_APPLICATION_HEALTH = """hs = {}
hs.status = "Progressing"
hs.message = "not reconciled yet"
if obj.status ~= nil and obj.status.health ~= nil then
  hs.status = obj.status.health.status
  hs.message = obj.status.health.message or ""
  if hs.status == "Healthy" and (obj.status.sync == nil or obj.status.sync.status ~= "Synced") then
    hs.status = "Progressing"
    hs.message = "healthy but not synced"
  end
end
return hs
"""

# The built-in check of an ApplicationSet reads its conditions only: Healthy as soon as its Applications
# are generated. This one is Healthy once every Application the set generated is Synced and Healthy
# (`status.resources`, which the ApplicationSet controller rewrites on every reconcile, and at once on
# each change of an app's health or sync status while progressive syncs are on), so that a root's sync
# waves wait on the apps of a set before applying the next. Nothing makes a set Degraded, which would
# fail the root's sync after its retries and leave its later waves unapplied until the next commit: an
# app that is Degraded, and a set the controller cannot generate (ErrorOccurred: a cluster not yet
# registered, as when a spoke is added before the RUNBOOK registers it), keep it Progressing with the
# reason, and the root waits until that is fixed (the GitOps alerts say so meanwhile).
APPLICATION_SET_HEALTH = """hs = {}
hs.status = "Progressing"
hs.message = "no Application generated yet"
if obj.status == nil then
  return hs
end
if obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "ErrorOccurred" and condition.status == "True" then
      hs.message = "cannot generate: " .. (condition.message or "ErrorOccurred")
      return hs
    end
  end
end
if obj.status.resources == nil then
  return hs
end
local count = 0
for _, app in ipairs(obj.status.resources) do
  count = count + 1
  local health = "Unknown"
  if app.health ~= nil and app.health.status ~= nil then
    health = app.health.status
  end
  local sync = app.status or "Unknown"
  if sync ~= "Synced" or health ~= "Healthy" then
    hs.message = app.name .. " is " .. sync .. " and " .. health
    return hs
  end
end
if count == 0 then
  return hs
end
if obj.status.resourcesCount ~= nil and obj.status.resourcesCount > count then
  hs.message = "the status lists " .. count .. " of " .. obj.status.resourcesCount .. " Applications"
  return hs
end
hs.status = "Healthy"
hs.message = count .. " Applications Synced and Healthy"
return hs
"""


def health_checks(ctx: ClusterContext) -> dict[str, str]:
    """The health checks the components of every cluster Argo CD manages ship, as argocd-cm keys."""
    found: dict[str, str] = {}
    for components in ctx.variant_components.values():
        for component in components:
            for (group, kind), script in component.health_checks.items():
                found[f"{HEALTH}{group}_{kind}"] = script
    return dict(sorted(found.items()))


class GlobalAffinity(Values):
    podAntiAffinity: Literal["", "soft", "hard"]


class ArgoGlobal(Placed):
    domain: str
    image: Image  # every Argo CD component but Redis (images.argocd: a release newer than the chart's)
    affinity: GlobalAffinity = GlobalAffinity(podAntiAffinity="hard")


HEALTH = "resource.customizations.health."


class ArgoCm(Values):
    """argocd-cm. Beside its fixed keys, the health checks the site's components ship for the custom
    resources whose readiness later apps depend on (`resource.customizations.health.<group>_<kind>`)."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _only_health_checks_beside(self) -> ArgoCm:
        unknown = sorted(k for k in self.model_extra or {} if not k.startswith(HEALTH))
        if unknown:
            raise ValueError(f"argocd-cm takes no key {unknown[0]!r}")
        return self

    url: str
    admin_enabled: Literal["true", "false"] = Field(alias="admin.enabled")
    oidc_config: str = Field(alias="oidc.config")
    resource_exclusions: str = Field(alias="resource.exclusions")
    application_health: str = Field(alias="resource.customizations.health.argoproj.io_Application")
    application_set_health: str = Field(alias="resource.customizations.health.argoproj.io_ApplicationSet")
    timeout_reconciliation: str = Field(alias="timeout.reconciliation")
    # a spoke's argocd-manager may list only the kinds the site deploys: watch those, not every kind
    respect_rbac: Literal["normal", "strict"] = Field("normal", alias="resource.respectRBAC")


class ArgoParams(Values):
    controller_diff_server_side: Literal["true", "false"] = Field(alias="controller.diff.server.side")
    server_insecure: Literal["true", "false"] = Field(alias="server.insecure")
    # No ApplicationSet here has a strategy. With the flag on, the controller reconciles a set whenever
    # one of its apps changes health or sync status (v3.4 shouldRequeueForApplication), so the
    # `status.resources` the sets' health check reads is current; off, it is refreshed only by the
    # generator's requeue (3 minutes) and the roots would wait that long between waves.
    progressive_syncs: Literal["true", "false"] = Field(
        alias="applicationsetcontroller.enable.progressive.syncs"
    )


class ArgoRbac(Values):
    policy_csv: str = Field(alias="policy.csv")
    policy_default: str = Field(alias="policy.default")
    scopes: str


class ArgoGpg(Values):
    keys: dict[str, str]  # key ID -> public key: argocd-gpg-keys-cm, what signatureKeys verify against


class ArgoConfigs(Values):
    cm: ArgoCm
    params: ArgoParams
    rbac: ArgoRbac
    gpg: ArgoGpg


class ArgoComponent(Values):
    replicas: int = Field(ge=1)
    resources: Resources
    pdb: Pdb = Pdb()


class HaProxy(Values):
    image: Image


class RedisHa(Placed):
    """Redis and its HAProxy both take the top-level placement of the redis-ha chart."""

    enabled: bool = True
    image: Image
    haproxy: HaProxy


class ArgoCrds(Values):
    install: bool = True
    keep: bool = True


class ArgoCDValues(Values):
    fullnameOverride: str = FULLNAME
    global_: ArgoGlobal = Field(alias="global")
    crds: ArgoCrds = ArgoCrds()
    configs: ArgoConfigs
    controller: ArgoComponent
    server: ArgoComponent
    repoServer: ArgoComponent
    applicationSet: ArgoComponent
    redis_ha: RedisHa = Field(alias="redis-ha")
    # Single sign-on is the site's choice; until configured, Dex stays off.
    dex: Toggle = OFF


def _backend_tls(ctx: ClusterContext) -> bool:
    return ctx.site.services.certificates.internal_ca


def _port(url: str) -> int:
    """The TCP port of a repository URL (ssh and scp-like URLs: 22)."""
    parsed = urlsplit(url if "://" in url else f"ssh://{url}")
    return parsed.port or (443 if parsed.scheme == "https" else 22)


def oidc_config(sso: Sso) -> str:
    return yaml.safe_dump(
        {
            "name": "SSO",
            "issuer": sso.issuer,
            "clientID": sso.client_id,
            "clientSecret": f"${ArgoCd.oidc_secret}:{ArgoCd.oidc_secret_key}",
            "requestedScopes": ["openid", "profile", "email", sso.groups_claim],
        },
        sort_keys=False,
    )


def rbac(groups: Mapping[str, str], sso: Sso) -> ArgoRbac:
    """Groups to built-in roles, and no default role: an authenticated user outside them sees nothing."""
    lines = [f"g, {group}, role:{role}" for group, role in sorted(groups.items())]
    return ArgoRbac(policy_csv="\n".join(lines) + "\n", policy_default="", scopes=f"[{sso.groups_claim}]")


class ArgoCd(ChartComponent):
    name = "argo-cd"
    job_secrets = (JobSecret("argocd-redis", "argocd-redis-secret-init", "argo-cd writes redis's password"),)
    chart = "argo-cd"
    serves = ("argoproj.io/v1alpha1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)  # no pod starts before the CNI
    security = NamespaceSecurity(
        "baseline", "the chart's redis-ha and haproxy are not verified against restricted; audit and warn are"
    )
    images = {
        "argocd": "every Argo CD component (the chart's appVersion is older)",
        "redis": "the redis-ha servers (the chart's come from a registry the site does not mirror)",
        "haproxy": "the redis-ha proxies (likewise)",
    }
    # The OIDC client secret, written from the vault into a Secret Argo CD reads by reference
    # (`$<secret>:<key>` needs the part-of label); the root renders its ExternalSecret (delivery.py).
    oidc_secret = "argocd-oidc"
    oidc_secret_key = "clientSecret"
    oidc_vault_key = "argocd/oidc"

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        ports = {_port(ctx.site.gitops.repo_url), 443}  # the repository, the OIDC issuer
        ports |= {c.spec.api.port for c in ctx.variant.spokes}  # the spokes' API servers
        return [Flow(WORLD, tuple(sorted(ports)), "the Git repository, the OIDC issuer, the spoke clusters")]

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        return [cls(scope.site.gitops.argocd.namespace)] if scope.is_hub else []

    def routes(self, ctx: ClusterContext) -> list[Route]:
        if _backend_tls(ctx):  # argocd-server serves the Secret it finds under this name
            backend = Backend(SERVER_SERVICE, 443, tls_secret=SERVER_TLS_SECRET)
        else:
            backend = Backend(SERVER_SERVICE, 80)
        return [Route("argocd", self.namespace, ctx.site.gitops.argocd.hostname, (backend,))]

    def values(self, ctx: ClusterContext) -> ArgoCDValues:
        site = ctx.site
        on_system = placed(ctx.system_placement)
        return ArgoCDValues(
            global_=ArgoGlobal(
                domain=site.gitops.argocd.hostname, image=image(ctx.image("argocd")), **on_system
            ),
            configs=ArgoConfigs(
                cm=ArgoCm(
                    url=f"https://{site.gitops.argocd.hostname}",
                    resource_exclusions=yaml.safe_dump(_EXCLUSIONS, sort_keys=False),
                    application_health=_APPLICATION_HEALTH,
                    application_set_health=APPLICATION_SET_HEALTH,
                    **health_checks(ctx),
                    timeout_reconciliation="180s",
                    admin_enabled="false",
                    oidc_config=oidc_config(site.gitops.argocd.sso),
                ),
                rbac=rbac(site.gitops.argocd.rbac, site.gitops.argocd.sso),
                gpg=ArgoGpg(keys=dict(sorted(site.gitops.signature_keys.items()))),
                # TLS ends at the site Gateway; the server speaks plain HTTP inside the cluster
                params=ArgoParams(
                    controller_diff_server_side="true",
                    # HTTPS up to the server with the internal CA; plain HTTP behind the Gateway else
                    server_insecure="false" if _backend_tls(ctx) else "true",
                    progressive_syncs="true",
                ),
            ),
            # One controller shard per cluster it manages.
            controller=ArgoComponent(
                replicas=len(ctx.variant.clusters), resources=requests("1", "2Gi", "4Gi")
            ),
            server=ArgoComponent(replicas=2, resources=requests("250m", "256Mi", "1Gi")),
            repoServer=ArgoComponent(replicas=2, resources=requests("500m", "512Mi", "2Gi")),
            applicationSet=ArgoComponent(replicas=2, resources=requests("100m", "128Mi", "512Mi")),
            redis_ha=RedisHa(
                image=image(ctx.image("redis")),
                haproxy=HaProxy(image=image(ctx.image("haproxy"))),
                **on_system,
            ),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "argocd-application-controller": RoleReview(
                (
                    READS_SECRETS,
                    GRANTS_ANY_ROLE,
                ),
                "the hub's Argo CD applies and compares every app's objects, their RBAC and Secrets included",
            ),
            "argocd-server": RoleReview(
                (READS_SECRETS,), "Argo CD's UI and API show live objects (a Secret's values masked)"
            ),
            "argocd-notifications-controller": RoleReview(
                (READS_SECRETS,),
                "the chart's cluster role of the notifications controller (Applications in any namespace); it reads its own namespace's notification secret",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/argocd-application-controller": Reviewed(
                EVERYTHING,
                "Argo CD applies every object of dist/ to the hub, its own managed cluster: it holds every kind it syncs",
            ),
            f"{self.namespace}/argocd-server": Reviewed(
                (
                    READS_SECRETS,
                    MAKES_PRIVILEGED_PODS,
                    PATCHES_PRIVILEGED_PODS,
                    REWRITES_ADMISSION,
                    CHANGES_NODES,
                    RELABELS_NAMESPACES,
                    UPDATES_CRDS,
                ),
                "the API behind the UI and CLI: resource actions, deletes and logs on every managed object, each checked against Argo CD's own RBAC (SSO groups) first",
            ),
            f"{self.namespace}/argocd-notifications-controller": Reviewed(
                (READS_SECRETS,),
                "the chart's ClusterRole lists and watches Secrets in every namespace (notifications for Applications in any namespace); it gets only its own Secret by name",
            ),
        }
