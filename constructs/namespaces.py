"""Namespaces with Pod Security labels, pinned to the cluster's Kubernetes minor."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from cdk8s_plus_27 import k8s

from constructs import Construct

PSA = "pod-security.kubernetes.io/"
TOLERATIONS_WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
# What the DefaultTolerationSeconds admission plugin adds to every pod before PodTolerationRestriction
# checks it: a whitelist must admit these too.
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
)
# What PodTolerationRestriction itself adds to every pod that is not BestEffort (it requests or limits
# CPU or memory) before it checks the whitelist (kubernetes#55251): a whitelist must admit it too.
MEMORY_PRESSURE_TOLERATION = {
    "key": "node.kubernetes.io/memory-pressure",
    "operator": "Exists",
    "effect": "NoSchedule",
}
PsaLevel = Literal["privileged", "baseline", "restricted"]


def psa_labels(level: PsaLevel, kubernetes_minor: str) -> dict[str, str]:
    """Enforce `level`; audit and warn at restricted, so every loosening stays visible."""
    watch = "privileged" if level == "privileged" else "restricted"
    labels = {}
    for mode, value in (("enforce", level), ("audit", watch), ("warn", watch)):
        labels[PSA + mode] = value
        labels[PSA + mode + "-version"] = kubernetes_minor
    return labels


class AppNamespace(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        level: PsaLevel,
        kubernetes_minor: str,
        labels: dict[str, str] | None = None,
        allowed_tolerations: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(scope, id)
        annotations = (
            {TOLERATIONS_WHITELIST: json.dumps(allowed_tolerations, sort_keys=True, separators=(",", ":"))}
            if allowed_tolerations is not None
            else None
        )
        k8s.KubeNamespace(
            self,
            "Resource",
            metadata=k8s.ObjectMeta(
                name=name,
                labels={**(labels or {}), **psa_labels(level, kubernetes_minor)},
                annotations=annotations,
            ),
        )


@dataclass(frozen=True)
class Quota:
    cpu: int  # cores
    memory_gb: int
    gpus: int
    gpu_resource: str
    storage_gb: int
    volumes: int


class NamespaceQuota(Construct):
    """A ResourceQuota: requests of CPU, memory and GPUs, volume claims and their size, and no Service
    of type LoadBalancer or NodePort (a namespace reaches the world through the site Gateway only)."""

    def __init__(self, scope: Construct, id: str, *, namespace: str, quota: Quota) -> None:
        super().__init__(scope, id)
        hard = {
            "requests.cpu": str(quota.cpu),
            "requests.memory": f"{quota.memory_gb}G",
            f"requests.{quota.gpu_resource}": str(quota.gpus),
            "requests.storage": f"{quota.storage_gb}G",
            "persistentvolumeclaims": str(quota.volumes),
            "services.loadbalancers": "0",
            "services.nodeports": "0",
        }
        k8s.KubeResourceQuota(
            self,
            "Resource",
            metadata=k8s.ObjectMeta(name="quota", namespace=namespace),
            spec=k8s.ResourceQuotaSpec(hard={k: k8s.Quantity.from_string(v) for k, v in hard.items()}),
        )
