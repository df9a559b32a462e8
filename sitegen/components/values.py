"""Typed Helm values: the base every chart's model derives from, and the blocks charts share.

Each model names only keys the pinned chart version has (extra keys are refused, at every depth), so a
typo fails at synth instead of being ignored by Helm. Placement always comes from a pool's `placement`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from sitegen.model import ImagePin, Placement, PoolLayout


class Values(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    def document(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- Kubernetes blocks, as charts pass them through ----------------------------------------------


class Toleration(Values):
    key: str | None = None
    operator: Literal["Exists", "Equal"]
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


EVERY_TAINT = [Toleration(operator="Exists")]  # node agents: every pool, whatever its taints and effects
# What a node carries until its CNI agent runs: bootstrap-critical workloads tolerate it.
NOT_READY = Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoSchedule")


class ResourceList(Values):
    cpu: str | None = None
    memory: str | None = None


class Resources(Values):
    requests: ResourceList
    limits: ResourceList | None = None


def requests(cpu: str, memory: str, memory_limit: str | None = None) -> Resources:
    """CPU and memory requests; a memory limit where a leak must not take the node's memory."""
    return Resources(
        requests=ResourceList(cpu=cpu, memory=memory),
        limits=ResourceList(memory=memory_limit) if memory_limit else None,
    )


class NodeSelectorRequirement(Values):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str]


class NodeSelectorTerm(Values):
    matchExpressions: list[NodeSelectorRequirement]


class NodeSelector(Values):
    nodeSelectorTerms: list[NodeSelectorTerm]


class NodeAffinity(Values):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector


class Affinity(Values):
    nodeAffinity: NodeAffinity


def required_affinity(pools: list[PoolLayout]) -> Affinity:
    """Node affinity to any of `pools`, for charts (or components) that take no nodeSelector."""
    terms = [
        NodeSelectorTerm(
            matchExpressions=[
                NodeSelectorRequirement(key=k, operator="In", values=[v])
                for k, v in p.placement.node_selector.items()
            ]
        )
        for p in pools
    ]
    return Affinity(
        nodeAffinity=NodeAffinity(
            requiredDuringSchedulingIgnoredDuringExecution=NodeSelector(nodeSelectorTerms=terms)
        )
    )


def tolerations_of(pools: list[PoolLayout]) -> list[Toleration]:
    """The tolerations for every taint of `pools`, each once, in pool order."""
    out: list[dict[str, str]] = []
    for pool in pools:
        out += [t for t in pool.placement.tolerations if t not in out]
    return [Toleration(**t) for t in out]


class Placed(Values):
    """A chart component placed by node selector and tolerations."""

    nodeSelector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None


def placed(placement: Placement) -> dict[str, Any]:
    """Keyword arguments of a `Placed` model for one pool's placement."""
    return {
        "nodeSelector": placement.node_selector,
        "tolerations": [Toleration(**t) for t in placement.tolerations],
    }


class Image(Values):
    repository: str
    tag: str


def image(pin: ImagePin) -> Image:
    return Image(repository=pin.repository, tag=pin.pinned_tag)


class Seccomp(Values):
    type: Literal["RuntimeDefault"] = "RuntimeDefault"


class PodSecurityContext(Values):
    """What Pod Security `restricted` asks of a pod beyond the usual chart defaults: a seccomp profile."""

    seccompProfile: Seccomp = Seccomp()


class DropAll(Values):
    drop: list[str] = ["ALL"]


class RestrictedContainer(Values):
    """A container as Pod Security `restricted` wants it, and a read-only root."""

    allowPrivilegeEscalation: bool = False
    capabilities: DropAll = DropAll()
    readOnlyRootFilesystem: bool = True


class NonRootPod(PodSecurityContext):
    """A pod that runs as a non-root user (of no image's /etc/passwd: the default for a chart's pod)."""

    runAsNonRoot: bool = True
    runAsUser: int = 65532
    runAsGroup: int = 65532
    fsGroup: int = 65532


class Toggle(Values):
    enabled: bool


ON = Toggle(enabled=True)
OFF = Toggle(enabled=False)


class Pdb(Values):
    enabled: bool = True
    minAvailable: int = 1


class SecretKeyRef(Values):
    name: str
    key: str


class EnvVarSource(Values):
    secretKeyRef: SecretKeyRef


class EnvVar(Values):
    name: str
    value: str | None = None
    valueFrom: EnvVarSource | None = None


class SecretRef(Values):
    name: str


class EnvFromSource(Values):
    secretRef: SecretRef


class SecretVolumeSource(Values):
    secretName: str


class HostPathVolumeSource(Values):
    path: str
    type: Literal["Directory", "DirectoryOrCreate"]


class Volume(Values):
    name: str
    secret: SecretVolumeSource | None = None
    hostPath: HostPathVolumeSource | None = None


class VolumeMount(Values):
    name: str
    mountPath: str
    readOnly: bool = False


def secret_volume(name: str, secret: str, mount_path: str) -> tuple[Volume, VolumeMount]:
    """A Secret mounted read-only: the volume and its mount."""
    return (
        Volume(name=name, secret=SecretVolumeSource(secretName=secret)),
        VolumeMount(name=name, mountPath=mount_path, readOnly=True),
    )
