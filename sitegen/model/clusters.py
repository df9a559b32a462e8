"""config/clusters.yaml: API endpoints and address ranges per cluster, and the checks on ranges."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import Field

from sitegen.model.fabric import Fabric
from sitegen.model.fields import Address, Cidr, ConfigError, DnsLabel, DnsName, Loc, Strict, dotted
from sitegen.model.network import Network
from sitegen.model.pools import Pool


class ApiEndpoint(Strict):
    dns_name: DnsName
    vip: Address
    port: Annotated[int, Field(ge=1, le=65535)] = 6443

    @property
    def endpoint(self) -> str:
        return f"{self.dns_name}:{self.port}"


class Cluster(Strict):
    id: Annotated[int, Field(ge=1, le=255)]
    api: ApiEndpoint
    pod_cidr: Cidr
    # the block each node's pods get from pod_cidr (Cilium cluster-pool IPAM)
    pod_cidr_node_mask: Annotated[int, Field(ge=16, le=28)] = 24
    service_cidr: Cidr
    load_balancer_cidr: Cidr
    dns_domain: DnsName = "cluster.local"
    etcd_quota_gib: Annotated[int, Field(ge=2, le=8)] = 8
    # A control-plane member that moved to another host: the member that left -> the host that took
    # its place. Synth refuses a member gone from the control plane unless it is listed here, and the
    # RUNBOOK gains the move's steps (the new member joins, then the old one leaves etcd).
    replaced_members: dict[DnsLabel, DnsLabel] = {}

    @property
    def api_audience(self) -> str:
        """The audience the API server accepts tokens for: kubeadm's service-account-issuer
        (https://kubernetes.default.svc.<dnsDomain>, kubeadm's API server manifest), which
        kube-apiserver's --api-audiences defaults to."""
        return f"https://kubernetes.default.svc.{self.dns_domain}"


# kube-apiserver refuses a larger IPv4 service range (--service-cluster-ip-range: at most 20 host bits)
MAX_SERVICE_HOST_BITS = 20


def check_clusters(clusters: dict[str, Cluster], pools: dict[str, Pool], network: Network) -> None:
    plane = network.kubernetes.cidr
    hosts = {h.address: h.name for p in pools.values() for h in p.hosts}
    ids: dict[int, str] = {}
    vips: dict[ipaddress.IPv4Address, str] = {}
    dns_names: dict[str, str] = {}
    for name, cluster in clusters.items():
        if cluster.pod_cidr.prefixlen > cluster.pod_cidr_node_mask:
            raise ConfigError(
                ("clusters", name, "pod_cidr"),
                f"{cluster.pod_cidr} is smaller than one node's block (/{cluster.pod_cidr_node_mask})",
            )
        if 32 - cluster.service_cidr.prefixlen > MAX_SERVICE_HOST_BITS:
            raise ConfigError(
                ("clusters", name, "service_cidr"),
                f"{cluster.service_cidr} is larger than the API server allows (/{32 - MAX_SERVICE_HOST_BITS} at most)",
            )
        vip, vip_loc = cluster.api.vip, ("clusters", name, "api", "vip")
        if cluster.id in ids:
            raise ConfigError(("clusters", name, "id"), f"id {cluster.id} is also used by {ids[cluster.id]}")
        ids[cluster.id] = name
        if vip in vips:
            raise ConfigError(vip_loc, f"{vip} is also the API VIP of {vips[vip]}")
        vips[vip] = name
        if cluster.api.dns_name in dns_names:
            raise ConfigError(
                ("clusters", name, "api", "dns_name"),
                f"{cluster.api.dns_name} is also the API name of {dns_names[cluster.api.dns_name]}",
            )
        dns_names[cluster.api.dns_name] = name
        if vip not in plane:
            raise ConfigError(vip_loc, f"{vip} must lie inside the Kubernetes plane {plane}")
        if vip in hosts:
            raise ConfigError(vip_loc, f"{vip} is the address of host {hosts[vip]}")
        for other, other_cluster in clusters.items():
            if vip in other_cluster.load_balancer_cidr:
                raise ConfigError(vip_loc, f"{vip} lies inside the load-balancer pool of {other}")
        lb_loc = ("clusters", name, "load_balancer_cidr")
        if not cluster.load_balancer_cidr.subnet_of(plane):
            raise ConfigError(
                lb_loc, f"{cluster.load_balancer_cidr} must lie inside the Kubernetes plane {plane}"
            )
        for address, host in hosts.items():
            if address in cluster.load_balancer_cidr:
                raise ConfigError(lb_loc, f"contains the address of host {host}")


def check_cidrs(network: Network, fabric: Fabric, clusters: dict[str, Cluster]) -> None:
    """Every routed range is disjoint; load-balancer pools live inside the Kubernetes plane on purpose."""
    ranges: list[tuple[Loc, ipaddress.IPv4Network]] = [
        (("network", "management", "bmc", "cidr"), network.management.bmc.cidr),
        (("network", "management", "os", "cidr"), network.management.os.cidr),
        (("network", "kubernetes", "cidr"), network.kubernetes.cidr),
    ]
    ranges += [(("fabric", "rails", n, "cidr"), r.cidr) for n, r in fabric.rails.items()]
    for name, cluster in clusters.items():
        ranges += [
            (("clusters", name, "pod_cidr"), cluster.pod_cidr),
            (("clusters", name, "service_cidr"), cluster.service_cidr),
        ]
    lb_pools = [(("clusters", n, "load_balancer_cidr"), c.load_balancer_cidr) for n, c in clusters.items()]
    for group in (ranges, lb_pools):
        for i, (loc, net) in enumerate(group):
            for other_loc, other in group[:i]:
                if net.overlaps(other):
                    raise ConfigError(loc, f"{net} overlaps {other} ({dotted(other_loc)})")
