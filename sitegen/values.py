"""Helm values of the upstream charts, as typed models built from the site model.

Each model names only keys the pinned chart version has (extra keys are refused), so a typo fails at
synth instead of being ignored by Helm. Placement always comes from a pool's `placement`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sitegen.layout import ClusterLayout, Placement, VariantLayout
from sitegen.model import Site


class Values(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    def document(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def requests(cpu: str, memory: str, memory_limit: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if memory_limit:
        out["limits"] = {"memory": memory_limit}
    return out


def _placed(placement: Placement) -> dict[str, Any]:
    return {"nodeSelector": placement.node_selector, "tolerations": list(placement.tolerations)}


# --- Cilium ------------------------------------------------------------------------------------


class CiliumCluster(Values):
    name: str
    id: int = Field(ge=1, le=255)


class CiliumIpamOperator(Values):
    clusterPoolIPv4PodCIDRList: list[str]
    clusterPoolIPv4MaskSize: int = Field(ge=16, le=28)


class CiliumIpam(Values):
    mode: str = "cluster-pool"
    operator: CiliumIpamOperator


class CiliumPlacedComponent(Values):
    enabled: bool | None = None
    replicas: int | None = None
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]


class CiliumHubbleTlsAuto(Values):
    # helm-generated certificates differ on every render; Argo CD would never converge
    method: str = "cronJob"


class CiliumHubbleTls(Values):
    auto: CiliumHubbleTlsAuto = CiliumHubbleTlsAuto()


class CiliumHubbleMetrics(Values):
    enabled: list[str]


class CiliumHubble(Values):
    enabled: bool = True
    metrics: CiliumHubbleMetrics
    relay: CiliumPlacedComponent
    ui: CiliumPlacedComponent
    tls: CiliumHubbleTls = CiliumHubbleTls()


class CiliumValues(Values):
    cluster: CiliumCluster
    k8sServiceHost: str
    k8sServicePort: int
    kubeProxyReplacement: bool = True
    routingMode: str = "native"
    ipv4NativeRoutingCIDR: str
    # Nodes share the 100GbE L2 segment, so each installs direct routes to the others' pod CIDRs.
    autoDirectNodeRoutes: bool = True
    enableIPv4Masquerade: bool = True
    bpf: dict[str, bool] = {"masquerade": True}
    ipam: CiliumIpam
    # Only the Ethernet bond: IPoIB rail devices must never carry the primary network.
    devices: list[str]
    # Multus chains the RDMA rails after Cilium; an exclusive CNI would delete its config.
    cni: dict[str, bool] = {"exclusive": False}
    l2announcements: dict[str, bool] = {"enabled": True}
    externalIPs: dict[str, bool] = {"enabled": True}
    gatewayAPI: dict[str, bool] = {"enabled": False}
    prometheus: dict[str, bool] = {"enabled": True}
    resources: dict[str, Any]
    # The agent is a node agent: it must run on every node, whatever the taint.
    tolerations: list[dict[str, str]] = [{"operator": "Exists"}]
    operator: CiliumPlacedComponent
    hubble: CiliumHubble


def cilium_values(site: Site, cluster: ClusterLayout) -> CiliumValues:
    spec = cluster.spec
    system = cluster.system_pool.placement
    return CiliumValues(
        cluster=CiliumCluster(name=cluster.name, id=spec.id),
        # The VIP, not the DNS name: the agent must reach the API before cluster DNS exists.
        k8sServiceHost=str(spec.api.vip),
        k8sServicePort=spec.api.port,
        ipv4NativeRoutingCIDR=str(spec.pod_cidr),
        ipam=CiliumIpam(
            operator=CiliumIpamOperator(
                clusterPoolIPv4PodCIDRList=[str(spec.pod_cidr)], clusterPoolIPv4MaskSize=24
            )
        ),
        devices=[site.network.kubernetes.interface],
        resources=requests("200m", "512Mi"),
        operator=CiliumPlacedComponent(replicas=2, resources=requests("100m", "256Mi"), **_placed(system)),
        hubble=CiliumHubble(
            metrics=CiliumHubbleMetrics(enabled=["dns", "drop", "tcp", "flow", "port-distribution", "icmp"]),
            relay=CiliumPlacedComponent(enabled=True, resources=requests("100m", "128Mi"), **_placed(system)),
            ui=CiliumPlacedComponent(enabled=True, resources=requests("50m", "64Mi"), **_placed(system)),
        ),
    )


# --- Argo CD -----------------------------------------------------------------------------------

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


class ArgoGlobal(Values):
    domain: str
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    affinity: dict[str, Any] = {"podAntiAffinity": "hard"}


class ArgoConfigs(Values):
    cm: dict[str, Any]
    params: dict[str, Any]


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


def argocd_values(site: Site, layout: VariantLayout) -> ArgoCDValues:
    import yaml

    system = layout.hub.system_pool.placement
    placed = _placed(system)
    return ArgoCDValues(
        global_=ArgoGlobal(domain=site.gitops.argocd.hostname, **placed),
        configs=ArgoConfigs(
            cm={
                "url": f"https://{site.gitops.argocd.hostname}",
                "resource.exclusions": yaml.safe_dump(_EXCLUSIONS, sort_keys=False),
                "resource.customizations.health.argoproj.io_Application": _APPLICATION_HEALTH,
                "timeout.reconciliation": "180s",
            },
            params={"controller.diff.server.side": "true"},
        ),
        # One controller shard per cluster it manages.
        controller=ArgoComponent(replicas=len(layout.clusters), resources=requests("1", "2Gi", "4Gi")),
        server=ArgoComponent(replicas=2, resources=requests("250m", "256Mi", "1Gi")),
        repoServer=ArgoComponent(replicas=2, resources=requests("500m", "512Mi", "2Gi")),
        applicationSet=ArgoComponent(replicas=2, resources=requests("100m", "128Mi", "512Mi")),
        redis_ha=RedisHa(haproxy=RedisHaProxy(**placed), **placed),
    )


def chart_values(site: Site, layout: VariantLayout, cluster: ClusterLayout, app: str) -> Values:
    if app == "cilium":
        return cilium_values(site, cluster)
    if app == "argo-cd":
        return argocd_values(site, layout)
    raise KeyError(f"no values model for chart app {app!r}")
