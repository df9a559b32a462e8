"""Values of the storage charts: External Secrets, AIStor operator and volume manager, PowerScale CSI, TopoLVM."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sitegen.layout import ClusterLayout, PoolLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests, required_affinity


def _tolerations(pools: list[PoolLayout]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for pool in pools:
        out += [t for t in pool.placement.tolerations if t not in out]
    return out


class ExternalSecretsValues(Values):
    installCRDs: bool = True
    replicaCount: int = 2
    nodeSelector: dict[str, str]
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    webhook: dict[str, Any]
    certController: dict[str, Any]


def external_secrets_values(
    site: Site, layout: VariantLayout, cluster: ClusterLayout
) -> ExternalSecretsValues:
    system = placed(cluster.system_pool.placement)
    return ExternalSecretsValues(
        resources=requests("100m", "128Mi", "512Mi"),
        webhook={"replicaCount": 2, "resources": requests("50m", "64Mi", "256Mi"), **system},
        certController={"resources": requests("50m", "64Mi", "256Mi"), **system},
        **system,
    )


class AIStorOperatorValues(Values):
    # The licence is the `minio-license` Secret written by External Secrets, never a chart value.
    global_: dict[str, Any] = Field(alias="global")


def aistor_operator_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> AIStorOperatorValues:
    return AIStorOperatorValues(
        global_={
            "operator": {
                "replicas": 2,
                "resources": requests("200m", "256Mi", "1Gi"),
                **placed(cluster.system_pool.placement),
            }
        }
    )


class VolumeManagerValues(Values):
    controller: dict[str, Any]
    nodeserver: dict[str, Any]


def volume_manager_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> VolumeManagerValues:
    storage = cluster.pool(site.storage.aistor.pool)
    return VolumeManagerValues(
        controller={"replicas": 3, **placed(cluster.system_pool.placement)},
        # the node server manages the drives, so it runs exactly where AIStor runs
        nodeserver=placed(storage.placement),
    )


class CsiIsilonValues(Values):
    controller: dict[str, Any]
    node: dict[str, Any]
    isiAccessZone: str
    isiPath: str
    isiAuthType: int = 1  # session-based authentication
    skipCertificateValidation: bool = False  # the OneFS CA comes with the credentials
    certSecretCount: int = 1
    enableQuota: bool = True
    allowedNetworks: list[str]
    snapshot: dict[str, bool] = {"enabled": True}
    resizer: dict[str, bool] = {"enabled": True}


def csi_isilon_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> CsiIsilonValues:
    ps = site.storage.powerscale
    mounting = [p for p in cluster.pools if p.name in ps.mount_pools]
    return CsiIsilonValues(
        controller={"controllerCount": 2, **placed(cluster.system_pool.placement)},
        # The chart places the node plugin by taint only: it tolerates the taints of the tainted pools
        # that mount NFS; the untainted ones are all listed in config (a model rule).
        node={"tolerations": _tolerations(mounting)},
        isiAccessZone=ps.access_zone,
        isiPath=ps.base_path,
        # NFS exports only to the Kubernetes plane, where the node IPs live
        allowedNetworks=[str(site.network.kubernetes.cidr)],
    )


class TopoLvmValues(Values):
    lvmd: dict[str, Any]
    node: dict[str, Any]
    controller: dict[str, Any]
    scheduler: dict[str, bool] = {"enabled": False}  # storage capacity tracking instead
    webhook: dict[str, Any] = {
        "podMutatingWebhook": {"enabled": False},
        "pvcMutatingWebhook": {"enabled": False},
    }
    cert_manager: dict[str, bool] = Field(default={"enabled": False}, alias="cert-manager")
    storageClasses: list[dict[str, Any]] = []  # the class is rendered by cdk8s


def topolvm_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> TopoLvmValues:
    from constructs.local_cache import DEVICE_CLASS

    cache = site.storage.local_cache
    pools = [p for p in cluster.pools if p.name in cache.pools]
    on_cache = {"affinity": required_affinity(pools), "tolerations": _tolerations(pools)}
    return TopoLvmValues(
        lvmd={
            "deviceClasses": [
                {"name": DEVICE_CLASS, "volume-group": cache.volume_group, "default": True, "spare-gb": 10}
            ],
            **on_cache,
        },
        node=on_cache,
        controller={
            "replicaCount": 2,
            "storageCapacityTracking": {"enabled": True},
            **placed(cluster.system_pool.placement),
        },
    )
