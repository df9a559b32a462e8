"""The NDR400 rails as Network Operator resources: one RDMA resource, IP pool and network per rail.

- NicClusterPolicy: the cluster-wide parts (Multus, CNI plugins, IPoIB CNI, nv-ipam) on fabric nodes;
- NicNodePolicy per fabric pool: the RDMA shared device plugin with one resource per rail of that pool
  (GPU rails vs storage rails), and the DOCA driver only when config asks for it;
- IPPool per rail (nv-ipam) and IPoIBNetwork per rail and tenant namespace.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata

from constructs import Construct
from constructs.objects import api_object
from imports.com.nvidia import nv_ipam
from sitegen.model import ClusterLayout, Fabric, ImagePin, Nic, PoolLayout

MELLANOX = "mellanox.com/v1alpha1"
NV_IPAM = "nv-ipam.nvidia.com/v1alpha1"
RDMA_PREFIX = "rdma"
# Pods on one node that may share a rail's RDMA device (the shared device plugin's rdmaHcaMax).
RDMA_HCA_MAX = 63
# Largest nv-ipam block handed to one node, whatever the rail's size.
MAX_NODE_BLOCK = 64


def rail_resource(rail: str) -> str:
    """The device-plugin resource name of a rail, without the `rdma/` prefix."""
    return f"rdma_rail_{rail.lower()}"


def rail_network(tenant: str, rail: str) -> str:
    """The IPoIBNetwork (and the NetworkAttachmentDefinition it renders) of a rail in a tenant namespace."""
    return f"{tenant}-rail-{rail.lower()}"


def rail_pool(rail: str) -> str:
    return f"rail-{rail.lower()}"


@dataclass(frozen=True)
class FabricImages:
    multus: ImagePin
    cni_plugins: ImagePin
    ipoib: ImagePin
    nv_ipam: ImagePin
    rdma_shared_device_plugin: ImagePin
    doca_driver: ImagePin


def _image(pin: ImagePin, **extra: Any) -> dict[str, Any]:
    repository, _, image = pin.repository.rpartition("/")
    return {"image": image, "repository": repository, "version": pin.tag, **extra}


def _object(
    scope: Construct, api_version: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any]
) -> ApiObject:
    return api_object(scope, "Resource", api_version, kind, metadata, spec=spec)


def _terms(pools: list[PoolLayout]) -> dict[str, Any]:
    """Required node affinity matching any of the pools (one term per pool, ORed)."""
    return {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": k, "operator": "In", "values": [v]}
                    for k, v in sorted(p.placement.node_selector.items())
                ]
            }
            for p in pools
        ]
    }


def _tolerations(pools: list[PoolLayout]) -> list[dict[str, str]]:
    seen: dict[tuple[str, ...], dict[str, str]] = {}
    for pool in pools:
        for toleration in pool.placement.tolerations:
            seen.setdefault(tuple(sorted(toleration.items())), toleration)
    return [seen[k] for k in sorted(seen)]


def node_block_size(rail_size: int, nodes: int) -> int:
    """The largest power of two that gives every node on the rail a block of the rail's subnet."""
    block = 1
    while block * 2 <= min(MAX_NODE_BLOCK, rail_size // max(nodes, 1)):
        block *= 2
    return block


class NicClusterPolicy(Construct):
    """Node agents on the fabric pools; the Deployments it creates (nv-ipam's controller) on the
    system pool, where the site's other controllers run (left unset, they may land on control-plane
    nodes)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pools: list[PoolLayout],
        system_pool: PoolLayout,
        images: FabricImages,
    ) -> None:
        super().__init__(scope, id)
        spec = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _terms(pools)},
            "tolerations": _tolerations(pools),
            "deploymentNodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": _terms([system_pool])
            },
            "deploymentTolerations": _tolerations([system_pool]),
            "secondaryNetwork": {
                "multus": _image(images.multus),
                "cniPlugins": _image(images.cni_plugins),
                "ipoib": _image(images.ipoib),
            },
            # The webhook would need cert-manager; pools are validated here, offline, instead.
            "nvIpam": _image(images.nv_ipam, enableWebhook=False),
        }
        _object(self, MELLANOX, "NicClusterPolicy", {"name": "nic-cluster-policy"}, spec)


class NicNodePolicy(Construct):
    """The per-pool part: this pool's rails as RDMA resources, and its NIC driver if config wants it."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pool: PoolLayout,
        nics: list[Nic],
        fabric: Fabric,
        images: FabricImages,
    ) -> None:
        super().__init__(scope, id)
        config = {
            "configList": [
                {
                    "resourceName": rail_resource(nic.rail),
                    "rdmaHcaMax": RDMA_HCA_MAX,
                    "selectors": {"ifNames": [nic.netdev], "linkTypes": ["infiniband"]},
                }
                for nic in sorted(nics, key=lambda n: n.rail)
            ]
        }
        spec: dict[str, Any] = {
            "nodeSelector": pool.placement.node_selector,
            "tolerations": list(pool.placement.tolerations),
            "rdmaSharedDevicePlugin": _image(
                images.rdma_shared_device_plugin, config=json.dumps(config, indent=2)
            ),
        }
        if fabric.driver == "doca-container":
            spec["ofedDriver"] = _image(
                images.doca_driver,
                upgradePolicy={
                    "autoUpgrade": True,
                    "maxParallelUpgrades": 1,
                    "drain": {"enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300},
                },
            )
        _object(self, MELLANOX, "NicNodePolicy", {"name": f"{pool.name}-rails"}, spec)


class RailIPPool(Construct):
    """The nv-ipam pool of a rail: typed by the class `cdk8s import` generated from the IPPool CRD."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        rail: str,
        subnet: ipaddress.IPv4Network,
        pools: list[PoolLayout],
        namespace: str,
    ) -> None:
        super().__init__(scope, id)
        nodes = sum(len(p.hosts) for p in pools)
        terms = [
            nv_ipam.IpPoolSpecNodeSelectorNodeSelectorTerms(
                match_expressions=[
                    nv_ipam.IpPoolSpecNodeSelectorNodeSelectorTermsMatchExpressions(
                        key=k, operator="In", values=[v]
                    )
                    for k, v in sorted(p.placement.node_selector.items())
                ]
            )
            for p in pools
        ]
        nv_ipam.IpPool(
            self,
            "Resource",
            metadata=ApiObjectMetadata(name=rail_pool(rail), namespace=namespace),
            spec=nv_ipam.IpPoolSpec(
                subnet=str(subnet),
                per_node_block_size=node_block_size(subnet.num_addresses, nodes),
                node_selector=nv_ipam.IpPoolSpecNodeSelector(node_selector_terms=terms),
            ),
        )


class RailNetwork(Construct):
    """IPoIB on a rail for one tenant namespace: Multus attaches it as `net-<rail>`."""

    def __init__(self, scope: Construct, id: str, *, rail: str, netdev: str, tenant: str) -> None:
        super().__init__(scope, id)
        spec = {
            "networkNamespace": tenant,
            "master": netdev,
            "ipam": json.dumps({"type": "nv-ipam", "poolName": rail_pool(rail)}),
        }
        _object(self, MELLANOX, "IPoIBNetwork", {"name": rail_network(tenant, rail)}, spec)


class RailFabric(Construct):
    """Every Network Operator resource of one cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: ClusterLayout,
        fabric: Fabric,
        subnets: dict[str, ipaddress.IPv4Network],  # this cluster's share of each rail
        images: FabricImages,
        ipam_namespace: str,
        tenants: list[str],
    ) -> None:
        super().__init__(scope, id)
        pools = [p for p in cluster.pools if p.name in fabric.nics]
        NicClusterPolicy(
            self, "NicClusterPolicy", pools=pools, system_pool=cluster.system_pool, images=images
        )
        for pool in pools:
            NicNodePolicy(
                self,
                f"Node-{pool.name}",
                pool=pool,
                nics=fabric.nics[pool.name],
                fabric=fabric,
                images=images,
            )
        rails = [r for r in fabric.rails if any(r in fabric.rails_of(p.name) for p in pools)]
        for rail in rails:
            on_rail = [p for p in pools if rail in fabric.rails_of(p.name)]
            RailIPPool(
                self, f"Pool-{rail}", rail=rail, subnet=subnets[rail], pools=on_rail, namespace=ipam_namespace
            )
        # GPU workloads attach the rails of their pool; one netdev per rail is a model rule.
        gpu_nics = {nic.rail: nic for p in pools if p.hardware.gpu is not None for nic in fabric.nics[p.name]}
        for tenant in tenants:
            for rail in (r for r in fabric.rails if r in gpu_nics):
                RailNetwork(
                    self, f"Net-{tenant}-{rail}", rail=rail, netdev=gpu_nics[rail].netdev, tenant=tenant
                )
