"""S3 on every AIStor server's own address, for the clusters that reach AIStor from outside.

One LoadBalancer Service per storage host, `externalTrafficPolicy: Local`, selecting the store's pods
(a label of its server pools), on an address of its own (Cilium LB-IPAM, `lbipam.cilium.io/ips`),
announced over ARP by that host, or its neighbour while it is down (a CiliumL2AnnouncementPolicy
each): the traffic of an address enters on the host that serves it, never through one node's port.
The S3 name resolves to all of them (DNS round robin; CoreDNS's `loadbalance` shuffles them for pods).
The addresses are the top of the cluster's load-balancer range, kept out of its general pool, given
down from the top in host order so that a growing pool moves none.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

from constructs import Construct
from constructs.objects import api_object

FRONT_LABEL = "sitegen.io/s3-front"  # on each front door's Service: the host it enters on
STORE_LABEL = "sitegen.io/s3-store"  # on the store's pods: what the front doors select
S3_PORT = 9000  # the AIStor server's S3 port (TLS with the operator's certificate)
FRONT_PORT = 443  # each front door's: what clients of other clusters and hosts connect to
HOSTNAME = "kubernetes.io/hostname"


def front_door_addresses(cidr: IPv4Network, hosts: list[str]) -> dict[str, IPv4Address]:
    """Each host's address, down from the top of the range in host order: the first host has the top
    address, so hosts added to the pool (appended in pools.yaml) take the addresses below and no
    existing front door moves (clients and DNS records hold them)."""
    usable = list(cidr.hosts())
    if len(hosts) >= len(usable):
        raise ValueError(f"{cidr} has {len(usable)} addresses for {len(hosts)} S3 front doors and the rest")
    return {host: usable[len(usable) - 1 - i] for i, host in enumerate(hosts)}


def general_range(cidr: IPv4Network, front_doors: int) -> tuple[IPv4Address, IPv4Address]:
    usable = list(cidr.hosts())
    return usable[0], usable[len(usable) - front_doors - 1]


class S3FrontDoors(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        store: str,
        namespace: str,
        addresses: dict[str, IPv4Address],
        interface: str,
    ) -> None:
        super().__init__(scope, id)
        hosts = list(addresses)
        for i, (host, address) in enumerate(addresses.items()):
            name = f"s3-{host}"
            api_object(
                self, f"Service-{host}", "v1", "Service",
                {"name": name, "namespace": namespace, "labels": {FRONT_LABEL: host},
                 "annotations": {"lbipam.cilium.io/ips": str(address)}},
                spec={
                    "type": "LoadBalancer",
                    "externalTrafficPolicy": "Local",  # served on the host that announces it
                    "selector": {STORE_LABEL: store},
                    "ports": [{"name": "https-s3", "port": FRONT_PORT, "targetPort": S3_PORT, "protocol": "TCP"}],
                },
            )  # fmt: skip
            neighbour = hosts[(i + 1) % len(hosts)]
            api_object(
                self, f"Announcement-{host}", "cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy",
                {"name": name},
                spec={
                    "nodeSelector": {"matchExpressions": [
                        {"key": HOSTNAME, "operator": "In", "values": sorted({host, neighbour})}
                    ]},
                    "serviceSelector": {"matchLabels": {FRONT_LABEL: host}},
                    "interfaces": [f"^{interface}$"],
                    "loadBalancerIPs": True,
                },
            )  # fmt: skip
        first, last = min(addresses.values()), max(addresses.values())
        api_object(
            self, "Pool", "cilium.io/v2", "CiliumLoadBalancerIPPool", {"name": f"{store}-s3-front-doors"},
            spec={
                "blocks": [{"start": str(first), "stop": str(last)}],
                "serviceSelector": {"matchExpressions": [{"key": FRONT_LABEL, "operator": "Exists"}]},
            },
        )  # fmt: skip
