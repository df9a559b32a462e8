"""The slice of Kubernetes semantics the bring-up simulation needs: quantities, label selectors,
taints and tolerations, node affinity, pod templates and their requests, and Argo CD's kind order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from constructs.namespaces import DEFAULT_TOLERATIONS as ADMISSION_DEFAULT_TOLERATIONS
from constructs.namespaces import MEMORY_PRESSURE_TOLERATION
from sitegen.check.labels import expression_matches as _expression
from sitegen.check.labels import label_selector_matches
from sitegen.tree.fields import dig

_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "m": Decimal("0.001"), "": 1,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9.]+(?:[eE][0-9]+)?)([a-zA-Z]*)$")


def quantity(value: object, *, milli: bool = False) -> int:
    """A resource quantity as an integer: millicores for cpu (`milli`), base units otherwise."""
    found = _QUANTITY.match(str(value).strip())
    if not found or found.group(2) not in _SUFFIX:
        raise ValueError(f"not a quantity: {value!r}")
    amount = Decimal(found.group(1)) * Decimal(_SUFFIX[found.group(2)])
    return int(amount * 1000) if milli else int(amount)


def requests_of(resources: Mapping[str, Any] | None) -> dict[str, int]:
    """A container's requests (limits stand in where requests are unset, as the API server defaults)."""
    resources = resources or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: quantity(v, milli=name == "cpu") for name, v in merged.items()}


def add(into: dict[str, int], more: Mapping[str, int], sign: int = 1) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + sign * amount


def node_affinity_matches(spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """nodeSelector and required node affinity of a pod spec (terms are ORed, expressions ANDed)."""
    if any(labels.get(k) != str(v) for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(
        all(_expression(e, labels) for e in t.get("matchExpressions") or []) for t in terms
    )


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


NOT_READY = (
    Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
    Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
)
CORDONED = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")  # what `kubectl cordon` adds

# What the DaemonSet controller adds to every DaemonSet pod (pkg/controller/daemon/util).
DAEMONSET_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
# What the DefaultTolerationSeconds admission plugin (on by default) adds to every pod without its own.
DEFAULT_TOLERATIONS = tuple({**t, "tolerationSeconds": 300} for t in ADMISSION_DEFAULT_TOLERATIONS)
_HOST_NETWORK_DAEMONSET_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Taint) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.effect:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint.key:
                return True
        elif t.get("key") == taint.key and str(t.get("value", "")) == taint.value:
            return True
    return False


def untolerated(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Taint]) -> list[Taint]:
    """The taints that keep a pod off a node (PreferNoSchedule never does)."""
    tolerations = list(tolerations)
    return [t for t in taints if t.effect != "PreferNoSchedule" and not tolerates(tolerations, t)]


@dataclass
class Node:
    name: str
    pool: str
    labels: dict[str, str]
    taints: list[Taint]
    capacity: dict[str, int]
    reserved: dict[str, int]
    ready: bool = False
    used: dict[str, int] = field(default_factory=dict)
    host_ports: dict[tuple[str, int], str] = field(default_factory=dict)  # (protocol, port) -> workload
    address: str = ""  # its InternalIP (kubelet node-ip)
    serving_certificate: bool = False  # one of the cluster CA (serverTLSBootstrap, approved), not self-signed
    reporting: bool = True  # its kubelet answers (False: down, rebooting; its pods are not ready)

    def allocatable(self, resource: str) -> int:
        return self.capacity.get(resource, 0) - self.reserved.get(resource, 0)

    def free(self, resource: str) -> int:
        return self.allocatable(resource) - self.used.get(resource, 0)

    def fits(self, requests: Mapping[str, int]) -> str | None:
        """None, or the first resource the node cannot supply. The model has no OS disk size, so
        ephemeral storage is not judged."""
        for name, amount in sorted(requests.items()):
            if name != "ephemeral-storage" and amount > self.free(name):
                return name
        return None


@dataclass(frozen=True)
class PodTemplate:
    """The pods one workload asks for. What it derives from its spec is computed once: a template is
    never changed, a new one replaces it (Kueue's flavor)."""

    kind: str
    namespace: str
    name: str
    replicas: int
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @cached_property
    def labels(self) -> dict[str, str]:
        return {k: str(v) for k, v in (self.metadata.get("labels") or {}).items()}

    @property
    def daemon(self) -> bool:
        return self.kind == "DaemonSet"

    @property
    def host_network(self) -> bool:
        return bool(self.spec.get("hostNetwork"))

    @cached_property
    def tolerations(self) -> list[Mapping[str, Any]]:
        own = list(self.spec.get("tolerations") or [])
        for default in DEFAULT_TOLERATIONS:
            if not tolerates(own, Taint(default["key"], "", "NoExecute")):
                own.append(default)
        if self.daemon:
            own += DAEMONSET_TOLERATIONS
            if self.host_network:
                own.append(_HOST_NETWORK_DAEMONSET_TOLERATION)
        return own

    @cached_property
    def requests(self) -> dict[str, int]:
        """Sum of the containers, or the largest init container where that is more (per resource)."""
        total: dict[str, int] = {}
        for c in self.spec.get("containers") or []:
            add(total, requests_of(c.get("resources")))
        for c in self.spec.get("initContainers") or []:
            if c.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
                add(total, requests_of(c.get("resources")))
                continue
            for name, amount in requests_of(c.get("resources")).items():
                total[name] = max(total.get(name, 0), amount)
        return {k: v for k, v in total.items() if v}

    @cached_property
    def host_ports(self) -> set[tuple[str, int]]:
        """The node ports its pod takes: each container port's hostPort, and on the host network every
        container port (the API server defaults hostPort to containerPort there)."""
        found = set()
        for c in [*(self.spec.get("containers") or []), *(self.spec.get("initContainers") or [])]:
            for port in c.get("ports") or []:
                number = port.get("hostPort") or (port.get("containerPort") if self.host_network else None)
                if number:
                    found.add((str(port.get("protocol", "TCP")), int(number)))
        return found

    @property
    def one_per_node(self) -> bool:
        """A required pod anti-affinity on the hostname against its own pods."""
        anti = dig(self.spec, "affinity", "podAntiAffinity") or {}
        for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if term.get("topologyKey") == "kubernetes.io/hostname" and label_selector_matches(
                term.get("labelSelector"), self.labels
            ):
                return True
        return False

    @cached_property
    def spread_keys(self) -> list[str]:
        """Topology keys of hard spread constraints: a node without the key is not a candidate."""
        return [
            c["topologyKey"]
            for c in self.spec.get("topologySpreadConstraints") or []
            if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        ]

    def why_not(self, node: Node) -> str | None:
        """None if the node is a candidate for this pod (resources aside), else the reason."""
        if not node_affinity_matches(self.spec, node.labels):
            return "node selector/affinity"
        missing = [k for k in self.spread_keys if k not in node.labels]
        if missing:
            return f"no {missing[0]} label (hard topology spread)"
        refused = untolerated(self.tolerations, node.taints)
        if refused:
            return f"taint {refused[0]}"
        return None

    def volumes(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("volumes") or [])

    def containers(self) -> list[Mapping[str, Any]]:
        return [*(self.spec.get("initContainers") or []), *(self.spec.get("containers") or [])]


def pod_template(body: Mapping[str, Any]) -> PodTemplate | None:
    kind, meta, spec = body.get("kind"), body.get("metadata") or {}, body.get("spec") or {}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        template, replicas = spec.get("template") or {}, spec.get("replicas", 1)
        if kind == "Job":
            replicas = spec.get("parallelism", 1)
        elif kind == "DaemonSet":
            replicas = 0
    elif kind == "CronJob":
        job = dig(spec, "jobTemplate", "spec") or {}
        template, replicas = job.get("template") or {}, job.get("parallelism", 1)
    else:
        return None
    return PodTemplate(
        kind, meta.get("namespace", ""), meta["name"], int(replicas),
        template.get("metadata") or {}, template.get("spec") or {},
    )  # fmt: skip


def secret_refs(template: PodTemplate) -> set[str]:
    """Secrets a pod needs before its containers start (optional references left out)."""
    names: set[str] = set()
    for v in template.volumes():
        secret = v.get("secret")
        if secret and not secret.get("optional"):
            names.add(secret["secretName"])
        for source in dig(v, "projected", "sources") or []:
            if "secret" in source and not source["secret"].get("optional"):
                names.add(source["secret"]["name"])
    for c in template.containers():
        for env in c.get("env") or []:
            ref = dig(env, "valueFrom", "secretKeyRef")
            if ref and not ref.get("optional"):
                names.add(ref["name"])
        for source in c.get("envFrom") or []:
            ref = source.get("secretRef")
            if ref and not ref.get("optional"):
                names.add(ref["name"])
    for pull in template.spec.get("imagePullSecrets") or []:
        names.add(pull["name"])
    return names


def config_map_refs(template: PodTemplate) -> set[str]:
    names: set[str] = set()
    for v in template.volumes():
        cm = v.get("configMap")
        if cm and not cm.get("optional"):
            names.add(cm["name"])
        for source in dig(v, "projected", "sources") or []:
            if "configMap" in source and not source["configMap"].get("optional"):
                names.add(source["configMap"]["name"])
    for c in template.containers():
        for env in c.get("env") or []:
            ref = dig(env, "valueFrom", "configMapKeyRef")
            if ref and not ref.get("optional"):
                names.add(ref["name"])
    return names


def claim_refs(template: PodTemplate) -> set[str]:
    return {
        v["persistentVolumeClaim"]["claimName"] for v in template.volumes() if "persistentVolumeClaim" in v
    }


# gitops-engine's sync order of known kinds (pkg/sync/kind_order); other kinds follow, by kind name.
KIND_ORDER = (
    "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
    "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
    "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
    "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
    "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
    "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
    "IngressClass", "Ingress", "APIService",
)  # fmt: skip
_RANK = {k: i for i, k in enumerate(KIND_ORDER)}


# A sync's phases in gitops-engine's order (pkg/sync: PreSync, Sync, PostSync), and the hook types
# that run in them: Argo CD's own, or Helm's, which count only without Argo CD's (pkg/sync/hook).
PRE_SYNC, SYNC, POST_SYNC = 0, 1, 2
ARGO_HOOKS = {"PreSync": PRE_SYNC, "Sync": SYNC, "PostSync": POST_SYNC}
HELM_HOOKS = {
    "pre-install": PRE_SYNC,
    "pre-upgrade": PRE_SYNC,
    "post-install": POST_SYNC,
    "post-upgrade": POST_SYNC,
}


def _types(text: object) -> list[str]:
    return [t.strip() for t in str(text).split(",")]


def sync_phases(body: Mapping[str, Any]) -> set[int]:
    """The phases of a sync that apply the object: Sync for an object that is no hook; a hook's own,
    none for one no sync runs (Argo CD's Skip, SyncFail or PostDelete; Helm's delete and test hooks)."""
    annotations = dig(body, "metadata", "annotations") or {}
    if "argocd.argoproj.io/hook" in annotations:
        return {ARGO_HOOKS[t] for t in _types(annotations["argocd.argoproj.io/hook"]) if t in ARGO_HOOKS}
    if "helm.sh/hook" in annotations:
        return {HELM_HOOKS[t] for t in _types(annotations["helm.sh/hook"]) if t in HELM_HOOKS}
    return {SYNC}


def sync_order(body: Mapping[str, Any]) -> tuple[int, int, int, str, str]:
    """(phase, wave, kind rank, kind, name): the order Argo CD applies the objects of one sync. The wave
    is the sync-wave annotation, else Helm's hook weight (gitops-engine's syncwaves.Wave); a hook of
    two phases is modelled in its first."""
    annotations = dig(body, "metadata", "annotations") or {}
    wave = int(annotations.get("argocd.argoproj.io/sync-wave", annotations.get("helm.sh/hook-weight", "0")))
    kind = str(body.get("kind", ""))
    phase = min(sync_phases(body), default=SYNC)
    return phase, wave, _RANK.get(kind, len(KIND_ORDER)), kind, str(body["metadata"].get("name", ""))


# Kinds every API server serves from the start (group, kind) -> resource name.
BUILTIN = {
    ("", "Namespace"): "namespaces", ("", "ServiceAccount"): "serviceaccounts",
    ("", "Secret"): "secrets", ("", "ConfigMap"): "configmaps", ("", "Service"): "services",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims", ("", "Pod"): "pods",
    ("", "ResourceQuota"): "resourcequotas", ("", "LimitRange"): "limitranges",
    ("", "Endpoints"): "endpoints",
    ("apps", "Deployment"): "deployments", ("apps", "StatefulSet"): "statefulsets",
    ("apps", "DaemonSet"): "daemonsets", ("batch", "Job"): "jobs", ("batch", "CronJob"): "cronjobs",
    ("policy", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("rbac.authorization.k8s.io", "ClusterRole"): "clusterroles",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "clusterrolebindings",
    ("rbac.authorization.k8s.io", "Role"): "roles",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
    ("networking.k8s.io", "NetworkPolicy"): "networkpolicies",
    ("networking.k8s.io", "Ingress"): "ingresses", ("networking.k8s.io", "IngressClass"): "ingressclasses",
    ("storage.k8s.io", "StorageClass"): "storageclasses", ("storage.k8s.io", "CSIDriver"): "csidrivers",
    ("scheduling.k8s.io", "PriorityClass"): "priorityclasses",
    ("node.k8s.io", "RuntimeClass"): "runtimeclasses",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "customresourcedefinitions",
    ("apiregistration.k8s.io", "APIService"): "apiservices",
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): "validatingwebhookconfigurations",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): "mutatingwebhookconfigurations",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): "validatingadmissionpolicies",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        "validatingadmissionpolicybindings",
    ("autoscaling", "HorizontalPodAutoscaler"): "horizontalpodautoscalers",
    ("coordination.k8s.io", "Lease"): "leases",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "flowschemas",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): "prioritylevelconfigurations",
    ("discovery.k8s.io", "EndpointSlice"): "endpointslices",
    ("resource.k8s.io", "DeviceClass"): "deviceclasses",
}  # fmt: skip


def group_of(body: Mapping[str, Any]) -> str:
    return str(body.get("apiVersion", "")).rpartition("/")[0]


def made_secret(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, name) of the Secret an object makes: itself, an ExternalSecret's target, a
    Certificate's."""
    kind, meta, spec = body.get("kind"), body.get("metadata") or {}, body.get("spec") or {}
    ns = str(meta.get("namespace", ""))
    if kind == "Secret":
        return ns, str(meta["name"])
    if kind == "ExternalSecret":
        return ns, str(dig(spec, "target", "name") or meta["name"])
    if kind == "Certificate":
        return ns, str(spec["secretName"])
    return None


def best_effort(spec: Mapping[str, Any]) -> bool:
    """The pod's QoS class is BestEffort: no container (nor the pod) requests or limits CPU or memory."""
    parts = [
        c.get("resources") or {}
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    ]
    parts.append(spec.get("resources") or {})  # pod-level resources
    return not any(
        quantity(values[name], milli=True) > 0
        for resources in parts
        for values in (resources.get("requests") or {}, resources.get("limits") or {})
        for name in ("cpu", "memory")
        if name in values
    )


def added_by_the_plugin(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """What PodTolerationRestriction merges into every pod that is not BestEffort before it checks the
    whitelist (kubernetes#55251): the memory-pressure toleration. Namespace defaults aside."""
    return [] if best_effort(spec) else [MEMORY_PRESSURE_TOLERATION]
