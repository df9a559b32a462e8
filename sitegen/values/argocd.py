"""Argo CD, on the hub's system pool."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sitegen.layout import VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests

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

# Application health was removed in Argo CD 1.8; restoring it lets a parent app wait on children.
_APPLICATION_HEALTH = """hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil and obj.status.health ~= nil then
  hs.status = obj.status.health.status
  if obj.status.health.message ~= nil then
    hs.message = obj.status.health.message
  end
end
return hs
"""


ARGOCD_FULLNAME = "argocd"


class ArgoGlobal(Values):
    domain: str
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    affinity: dict[str, Any] = {"podAntiAffinity": "hard"}


class ArgoConfigs(Values):
    cm: dict[str, Any]
    params: dict[str, Any]
    # OCI Helm registries need a repository entry with enableOCI; it holds no credentials.
    repositories: dict[str, dict[str, str]]


class ArgoComponent(Values):
    replicas: int = Field(ge=1)
    resources: dict[str, Any]
    pdb: dict[str, Any] = {"enabled": True, "minAvailable": 1}


class RedisHaProxy(Values):
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]


class RedisHa(Values):
    enabled: bool = True
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    haproxy: RedisHaProxy


class ArgoCDValues(Values):
    # the usual object names (argocd-server, ...), which the HTTPRoute and runbook name
    fullnameOverride: str = ARGOCD_FULLNAME
    global_: ArgoGlobal = Field(alias="global")
    crds: dict[str, bool] = {"install": True, "keep": True}
    configs: ArgoConfigs
    controller: ArgoComponent
    server: ArgoComponent
    repoServer: ArgoComponent
    applicationSet: ArgoComponent
    redis_ha: RedisHa = Field(alias="redis-ha")
    # Single sign-on is the site's choice; until configured, Dex stays off.
    dex: dict[str, bool] = {"enabled": False}


def _oci_repositories(site: Site, layout: VariantLayout) -> dict[str, dict[str, str]]:
    from sitegen.apps import cluster_apps

    pins = {
        app.chart: site.versions.charts[app.chart]
        for cluster in layout.clusters
        for app in cluster_apps(site, layout, cluster)
        if app.chart and site.versions.charts[app.chart].is_oci
    }
    return {
        name: {"name": name, "url": pin.argo_repo, "type": "helm", "enableOCI": "true"}
        for name, pin in sorted(pins.items())
    }


def argocd_values(site: Site, layout: VariantLayout) -> ArgoCDValues:
    import yaml

    system = layout.hub.system_pool.placement
    on_system = placed(system)
    return ArgoCDValues(
        global_=ArgoGlobal(domain=site.gitops.argocd.hostname, **on_system),
        configs=ArgoConfigs(
            cm={
                "url": f"https://{site.gitops.argocd.hostname}",
                "resource.exclusions": yaml.safe_dump(_EXCLUSIONS, sort_keys=False),
                "resource.customizations.health.argoproj.io_Application": _APPLICATION_HEALTH,
                "timeout.reconciliation": "180s",
            },
            # TLS ends at the site Gateway; the server speaks plain HTTP inside the cluster
            params={"controller.diff.server.side": "true", "server.insecure": "true"},
            repositories=_oci_repositories(site, layout),
        ),
        # One controller shard per cluster it manages.
        controller=ArgoComponent(replicas=len(layout.clusters), resources=requests("1", "2Gi", "4Gi")),
        server=ArgoComponent(replicas=2, resources=requests("250m", "256Mi", "1Gi")),
        repoServer=ArgoComponent(replicas=2, resources=requests("500m", "512Mi", "2Gi")),
        applicationSet=ArgoComponent(replicas=2, resources=requests("100m", "128Mi", "512Mi")),
        redis_ha=RedisHa(haproxy=RedisHaProxy(**on_system), **on_system),
    )
