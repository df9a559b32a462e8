"""The Prometheus of a cluster, as kube-prometheus-stack's values: on the hub the HA server on its
nodes' NVMe, evaluating every rule and receiving the other clusters' series; elsewhere an agent that
writes its series to the hub through the telemetry door (keeping a few hours where a GPU node guard
reads them)."""

from __future__ import annotations

from typing import Any, Literal

from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.components.context import ClusterContext
from sitegen.components.observability.telemetry import REMOTE_WRITE_SECRET, SITE_CA_KEY, SITE_CA_SECRET
from sitegen.components.values import Pdb, Placed, Resources, SecretKeyRef, Values, requests


class StorageRequest(Values):
    storage: str


class StorageResources(Values):
    requests: StorageRequest


class VolumeClaimSpec(Values):
    storageClassName: str
    accessModes: list[str]
    resources: StorageResources


class VolumeClaimTemplate(Values):
    spec: VolumeClaimSpec


class StorageSpec(Values):
    volumeClaimTemplate: VolumeClaimTemplate


def local_volume(size_gb: int) -> StorageSpec:
    return StorageSpec(
        volumeClaimTemplate=VolumeClaimTemplate(
            spec=VolumeClaimSpec(
                storageClassName=LOCAL_NVME,
                accessModes=["ReadWriteOnce"],
                resources=StorageResources(requests=StorageRequest(storage=f"{size_gb}G")),
            )
        )
    )


class RemoteWriteAuth(Values):
    username: SecretKeyRef
    password: SecretKeyRef


class CaSecret(Values):
    secret: SecretKeyRef


class TlsConfig(Values):
    ca: CaSecret


class RemoteWrite(Values):
    url: str
    name: str
    basicAuth: RemoteWriteAuth
    tlsConfig: TlsConfig | None = None


class PrometheusSpec(Placed):
    replicas: int
    podAntiAffinity: Literal["soft", "hard"] | None = None
    retention: str | None = None
    retentionSize: str | None = None
    storageSpec: StorageSpec | None = None
    externalLabels: dict[str, str]
    # Select every monitor of the cluster, not only those carrying the chart's release label.
    serviceMonitorSelectorNilUsesHelmValues: bool = False
    podMonitorSelectorNilUsesHelmValues: bool = False
    probeSelectorNilUsesHelmValues: bool = False
    scrapeConfigSelectorNilUsesHelmValues: bool = False
    ruleSelectorNilUsesHelmValues: bool | None = None
    enableRemoteWriteReceiver: bool | None = None
    remoteWrite: list[RemoteWrite] | None = None
    resources: Resources


class Prometheus(Values):
    agentMode: bool | None = None
    podDisruptionBudget: Pdb | None = None
    prometheusSpec: PrometheusSpec


LOCAL_RETENTION = "6h"  # a spoke's own queryable series (its GPU node guard's); the hub keeps them all


def hub_prometheus(ctx: ClusterContext, system: dict[str, Any]) -> Prometheus:
    """The hub's Prometheus: replicas on their nodes' NVMe, evaluating every rule, receiving the spokes'
    series."""
    prom = ctx.site.services.monitoring.prometheus
    return Prometheus(
        podDisruptionBudget=Pdb(),
        prometheusSpec=PrometheusSpec(
            replicas=prom.replicas,
            podAntiAffinity="hard",  # the two copies never share a node
            retention=f"{prom.retention_days}d",
            retentionSize=prom.retention_size,
            storageSpec=local_volume(prom.volume_gb),
            externalLabels={"cluster": ctx.cluster.name},
            ruleSelectorNilUsesHelmValues=False,  # and every rule
            # the agents of the other clusters write here, through the Gateway
            enableRemoteWriteReceiver=bool(ctx.variant.spokes),
            resources=requests("4", "32Gi", "64Gi"),
            **system,
        ),
    )


def spoke_prometheus(ctx: ClusterContext, system: dict[str, Any]) -> Prometheus:
    """A spoke's Prometheus, writing its series to the hub through the Gateway."""
    tls = None
    if ctx.site.services.certificates.internal_ca:
        tls = TlsConfig(ca=CaSecret(secret=SecretKeyRef(name=SITE_CA_SECRET, key=SITE_CA_KEY)))
    # A cluster with GPUs keeps a few hours of its own series, queryable: its GPU node guard
    # asks them (gpu-node-guard); any other spoke only forwards (agent mode).
    local = ctx.has_gpus
    return Prometheus(
        agentMode=not local,
        prometheusSpec=PrometheusSpec(
            replicas=1,
            retention=LOCAL_RETENTION if local else None,
            externalLabels={"cluster": ctx.cluster.name},
            remoteWrite=[
                RemoteWrite(
                    url=f"https://{ctx.site.services.monitoring.telemetry_hostname}/api/v1/write",
                    name=ctx.variant.hub.name,
                    basicAuth=RemoteWriteAuth(
                        username=SecretKeyRef(name=REMOTE_WRITE_SECRET, key="username"),
                        password=SecretKeyRef(name=REMOTE_WRITE_SECRET, key="password"),
                    ),
                    tlsConfig=tls,
                )
            ],
            resources=requests("500m", "2Gi", "8Gi"),
            **system,
        ),
    )
