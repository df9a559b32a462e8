"""Cilium, the primary CNI."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sitegen.layout import ClusterLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests


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
    prometheus: dict[str, bool] | None = None


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
        operator=CiliumPlacedComponent(
            replicas=2, resources=requests("100m", "256Mi"), prometheus={"enabled": True}, **placed(system)
        ),
        hubble=CiliumHubble(
            metrics=CiliumHubbleMetrics(enabled=["dns", "drop", "tcp", "flow", "port-distribution", "icmp"]),
            relay=CiliumPlacedComponent(enabled=True, resources=requests("100m", "128Mi"), **placed(system)),
            ui=CiliumPlacedComponent(enabled=True, resources=requests("50m", "64Mi"), **placed(system)),
        ),
    )
