"""The AIStor ObjectStore on the storage pool: its server pools (30 servers x 24 NVMe to start),
erasure layout from config.

TLS: the operator's auto-certificate (`disableAutoCert: false`), with the external S3 name added as a
SAN. It needs no cert-manager on the AIStor cluster and is renewed by the operator; the known gap
(a new pool's host names missing from the certificate) does not apply while pools are only added by
a reviewed config change, which also re-issues it.
"""

from __future__ import annotations

import json
from typing import Any

from constructs import Construct
from constructs.fabric import RDMA_PREFIX, rail_resource
from constructs.objects import RESTRICTED_CONTAINER, SKIP_DRY_RUN, api_object
from constructs.s3_front_doors import STORE_LABEL
from constructs.secrets import VaultSecret
from sitegen.model import AIStorTier, Fabric, ImagePin, PoolLayout

METRICS_PATH = "/minio/v2/metrics/cluster"  # MinIO metrics v2, cluster-wide (cmd/metrics-router.go)

OBJECT_STORE = "aistor"  # the ObjectStore's name and namespace

DRIVE_CLASS = "directpv-min-io"  # AIStor Volume Manager's StorageClass (one volume per drive)
# A PVC slightly below the drive: the filesystem takes a few percent of the raw bytes.
DRIVE_FILL = 0.97
# Requests above half a node keep two AIStor servers off one node, whatever the labels.
NODE_SHARE = 0.75
LICENSE_ANNOTATION = {"aistor.min.io/license": "Enterprise"}


def volume_size(drive_gb: int) -> str:
    return f"{int(drive_gb * 1e9 * DRIVE_FILL / 2**30)}Gi"


class ObjectStore(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        pool: PoolLayout,
        tier: AIStorTier,
        parity: int,
        image: ImagePin,
        fabric: Fabric,
        store: str,
    ) -> None:
        super().__init__(scope, id)
        pool_spec = _server_pool(name, pool, rdma_rails=fabric.rails_of(pool.name) if tier.rdma else None)
        spec = {
            "image": image.ref,
            "configuration": {"name": f"{name}-env"},
            "env": _env(tier, parity),
            # A ServiceMonitor by the operator, on the path of the metrics the site reads (metrics v2's
            # cluster endpoint: every node's drives, capacity, healing and S3 traffic), whatever the
            # operator's default path: names differ in v3, and an alert on a name nobody scrapes is silent
            "prometheusOperator": True,
            "prometheusOperatorScrapeMetricsPaths": [METRICS_PATH],
            "certificates": {"disableAutoCert": False, "config": {"dnsNames": [tier.s3_hostname]}},
            # S3 on a load-balancer address under the external name: for the hub's services when AIStor
            # is a cluster of its own, for hosts and the operator's `mc` in either variant
            "services": {"minio": {"serviceType": "LoadBalancer"}},
            # the operator's PodDisruptionBudget per pool keeps a drain inside the erasure budget
            "disablePodDisruptionBudget": False,
            # one entry per server pool, in the order added: an entry never changes once it started
            "pools": [
                {"name": f"pool-{i}", "servers": server_pool.servers, **pool_spec}
                for i, server_pool in enumerate(tier.server_pools)
            ],
        }
        metadata = {
            "name": name,
            "namespace": namespace,
            "annotations": SKIP_DRY_RUN,
        }
        api_object(self, "Resource", "aistor.min.io/v1", "ObjectStore", metadata, spec=spec)
        VaultSecret(
            self,
            "RootCredentials",
            name=f"{name}-env",
            namespace=namespace,
            store=store,
            key=root_key(name),
            properties=["user", "password"],
            template={
                "config.env": 'export MINIO_ROOT_USER="{{ .user }}"\nexport MINIO_ROOT_PASSWORD="{{ .password }}"\n'
            },
        )


def _env(tier: AIStorTier, parity: int) -> list[dict[str, str]]:
    env = [{"name": "MINIO_STORAGE_CLASS_STANDARD", "value": f"EC:{parity}"}]
    if isinstance(tier.set_drive_count, int):
        env.append({"name": "MINIO_ERASURE_SET_DRIVE_COUNT", "value": str(tier.set_drive_count)})
    if tier.rdma:
        # The RDMA build, inter-node shards over the storage rails. Needs aistor-operator >= 6.0.0.
        env.append({"name": "MINIO_RDMA_INTERNODE", "value": "on"})
    return env


def _server_pool(name: str, pool: PoolLayout, *, rdma_rails: list[str] | None) -> dict[str, Any]:
    """What every server pool of the store has in common: its servers' drives, placement and resources,
    and with `rdma_rails` (None: TCP only) a network attachment and NIC on each storage rail."""
    hw = pool.hardware
    resources: dict[str, Any] = {
        "requests": {
            "cpu": str(int(hw.cpu_cores * NODE_SHARE)),
            "memory": f"{int(hw.memory_gb * NODE_SHARE)}G",
        },
        "limits": {"memory": f"{int(hw.memory_gb * 0.9)}G"},
    }
    pool_spec: dict[str, Any] = {
        "volumesPerServer": hw.nvme.drives,
        "volumeClaimTemplate": {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": DRIVE_CLASS,
                "resources": {"requests": {"storage": volume_size(hw.nvme.drive_gb)}},
            },
        },
        "nodeSelector": pool.placement.node_selector,
        "tolerations": list(pool.placement.tolerations),
        "labels": {STORE_LABEL: name},  # the S3 front doors' selector
        "resources": resources,
        "securityContext": {
            "runAsUser": 1000,
            "runAsGroup": 1000,
            "fsGroup": 1000,
            "runAsNonRoot": True,
            "fsGroupChangePolicy": "OnRootMismatch",
        },
        "containerSecurityContext": RESTRICTED_CONTAINER,
    }
    if rdma_rails is not None:
        pool_spec["annotations"] = {
            "k8s.v1.cni.cncf.io/networks": json.dumps(
                [{"name": f"storage-rail-{r.lower()}", "interface": f"net-{r.lower()}"} for r in rdma_rails],
                separators=(",", ":"),
            )
        }
        for kind in ("requests", "limits"):
            resources[kind].update({f"{RDMA_PREFIX}/{rail_resource(r)}": "1" for r in rdma_rails})
    return pool_spec


def root_key(name: str) -> str:
    """The vault key of an ObjectStore's root credentials (user, password)."""
    return f"aistor/{name}/root"


def license_secret(scope: Construct, id: str, *, namespace: str, store: str) -> VaultSecret:
    """AIStor (server and volume manager) runs read-only without its licence: `minio-license`."""
    return VaultSecret(
        scope,
        id,
        name="minio-license",
        namespace=namespace,
        store=store,
        key="aistor/license",
        properties=["license"],
        annotations=LICENSE_ANNOTATION,
        template={"license": "{{ .license }}"},
    )
