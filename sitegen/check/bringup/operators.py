"""What operators make of their custom resources and write into their status, as Argo CD's health
checks (argocd-cm, health.py) and the runbook read it: AIStor's ObjectStore (a StatefulSet per server
pool; a state per pool, and the store's once all are up), CloudNativePG's Cluster (its instances, one
per node, on their volumes; its phase, which Argo CD's built-in check reads: healthy once every
instance runs, stopped while a plugin it names is not there), the GPU Operator's ClusterPolicy (ready
once the operator and Node Feature Discovery run) and the Network Operator's NicClusterPolicy (ready
once the operator runs), and Envoy Gateway's of Gateway API objects (refusals/gateway.py).

The workloads operators make of other custom resources are declared by the components that ship them
(`Component.operands`, components/operands.py: prometheus-operator's Prometheus, PrometheusAgent and
Alertmanager, Envoy Gateway's proxies of a Gateway): made once the resource is applied (again when an
object it reads comes, while none of its pods is placed), owned by the resource's app, held while their
operator is not running, and scheduled like any workload (placement, quotas, claims, pod refusals).

Not modelled: the status of any other custom resource (Argo CD's rules alone judge it), the operands
of the GPU and Network Operators as workloads (what they advertise on nodes is nodes.py's), a rollout
of an operand whose resource changes once its pods are placed, the operand's removal with its resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sitegen.check.bringup.kube import PodTemplate, group_of
from sitegen.check.bringup.nodes import KUBELET_SERVING, NodeAgents
from sitegen.check.bringup.objects import Applied, ClusterObjects, Key, Workload, key_of
from sitegen.check.bringup.refusals import gateway
from sitegen.check.bringup.secrets import Secrets
from sitegen.components.catalog import COMPONENTS
from sitegen.components.operands import Operand, Ref, pointer
from sitegen.tree.fields import dig

CNPG_CLUSTER = ("postgresql.cnpg.io", "Cluster")
BARMAN_OBJECT_STORE = ("barmancloud.cnpg.io", "ObjectStore")
BARMAN_PLUGIN = "barman-cloud.cloudnative-pg.io"
OPERANDS = tuple(operand for component in COMPONENTS for operand in component.operands)


def _readers(operands: tuple[Operand, ...]) -> dict[str, tuple[Operand, ...]]:
    """kind -> the operands that read objects of it: their resources', and those their references name."""
    found: dict[str, tuple[Operand, ...]] = {}
    for operand in operands:
        chains = [*operand.config, *((operand.only_if[0],) if operand.only_if else ())]
        for kind in sorted({operand.kind, *(ref.kind for chain in chains for ref in chain)}):
            found[kind] = (*found.get(kind, ()), operand)
    return found


_OPERANDS_READING = _readers(OPERANDS)


class GatewayView:
    """What of a cluster Envoy Gateway reads (refusals/gateway.py's `GatewayView`): its objects, whether
    a listener's certificate Secret is there, whether LB IPAM can give an address."""

    def __init__(self, cluster: ClusterObjects, secrets: Secrets, node_agents: NodeAgents) -> None:
        self.find, self.of_kind = cluster.find, cluster.of_kind
        self.app_running, self.namespace_labels = cluster.app_running, cluster.namespace_labels
        self.secret_blocker = secrets.secret_blocker
        self.load_balancer_blocker = node_agents.load_balancer_blocker


class Operators:
    """What operators make of the custom resources applied (cluster.py calls `applied` on every apply)
    and write into their status."""

    def __init__(self, cluster: ClusterObjects, node_agents: NodeAgents, secrets: Secrets) -> None:
        self.cluster = cluster
        self.node_agents = node_agents
        self.secrets = secrets
        self._gateway_view = GatewayView(cluster, secrets, node_agents)

    def applied(self, body: Mapping[str, Any], owner: str) -> None:
        """The workloads an operator makes of the object just applied."""
        for pool_key, workload in _operator_workloads(body, owner):
            self.cluster.workloads.setdefault(pool_key, workload)
        self._refresh_operands(str(body.get("kind")))

    def _refresh_operands(self, kind: str) -> None:
        """The workloads the components' declared operands make (`Component.operands`) of the resources
        of their kind, made again when an object they read is applied (a GatewayClass after its Gateway,
        Argo CD's kind order): a workload not yet placed takes the new template; a placed one keeps its
        pods (a rollout is not modelled)."""
        for operand in _OPERANDS_READING.get(kind, ()):
            for _, applied in self.cluster.of_kind(operand.kind):
                made = operand_workload(operand, applied.body, applied.owner, self.cluster.find)
                if made is None:
                    continue
                key, workload = made
                found = self.cluster.workloads.get(key)
                if found is None:
                    self.cluster.workloads[key] = workload
                    self.cluster.changes += 1
                elif not found.placed and found.template != workload.template:
                    found.template, found.claim_classes = workload.template, workload.claim_classes
                    self.cluster.changes += 1

    # ---- what operators write into the status of their custom resources -------------------------
    def controller_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The status the modelled controller of `body` has written by now (what Argo CD's health
        scripts read); {} for kinds whose controller writes nothing the simulation models."""
        group, kind, ns, name = key_of(body)
        if (group, kind) == ("aistor.min.io", "ObjectStore"):
            if self._certificate_denier(body) is not None:
                return {"currentState": "Waiting for MinIO TLS Certificate", "healthStatus": "red"}
            return self._object_store_status(ns, name)
        if (group, kind) == ("nvidia.com", "ClusterPolicy"):
            # the operator reports ready once its operands run where NFD found NVIDIA devices
            nfd = self.cluster.provider_of_kind("nfd.k8s-sigs.io", "NodeFeature")
            ready = self.cluster.controller_running(group, kind) and self.cluster.app_running(nfd)
            return {"state": "ready" if ready else "notReady"}
        if (group, kind) == ("mellanox.com", "NicClusterPolicy"):
            return {"state": "ready" if self.cluster.controller_running(group, kind) else "notReady"}
        if (group, kind) == CNPG_CLUSTER:
            return self._database_status(body)
        if group == gateway.GROUP:  # Envoy Gateway's status of Gateway API objects
            return gateway.status_of(body, self._gateway_view)
        return {}

    def _database_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """As CloudNativePG reports a Cluster: its phase and instances (pkg/apis/v1 cluster_types.go's
        phase texts). A plugin it names (the WAL archiver) must run before it reconciles at all."""
        if not self.cluster.controller_running(*CNPG_CLUSTER):
            return {}
        _, _, ns, name = key_of(body)
        plugins = [p["name"] for p in dig(body, "spec", "plugins") or [] if p.get("enabled", True)]
        if any(p == BARMAN_PLUGIN for p in plugins) and not self.cluster.controller_running(
            *BARMAN_OBJECT_STORE
        ):
            return {
                "phase": "Cluster cannot proceed to reconciliation due to an unknown plugin being required"
            }
        w = self.cluster.workloads.get(("apps", "StatefulSet", ns, name))
        ready = sum(w.placed.values()) if w is not None and w.placed else 0
        instances = int(dig(body, "spec", "instances", default=1))
        if w is not None and w.running:
            phase = "Cluster in healthy state"
        elif ready == 0:
            phase = "Setting up primary"
        else:
            phase = "Waiting for the instances to become active"
        return {
            "phase": phase,
            "instances": instances,
            "readyInstances": ready if w is None or not w.running else instances,
        }

    def behind_status(self, body: Mapping[str, Any]) -> str | None:
        """Why the controller reports what it does, as far as the simulation knows (for the blocker:
        Argo CD shows only the status)."""
        group, kind, ns, name = key_of(body)
        if (group, kind) == ("aistor.min.io", "ObjectStore"):
            denier = self._certificate_denier(body)
            if denier is not None:
                return (
                    f"{denier.template.ref} denies the operator's request for the store's TLS certificate "
                    f"(signer {KUBELET_SERVING}, requested by the operator, not system:node:<name>): set "
                    "IGNORE_NON_SYSTEM_NODE=true"
                )
            pools = self._pools(ns, name)
            return next((f"{w.template.ref}: {w.reason}" for _, w in pools if not w.running), None)
        if (group, kind) == CNPG_CLUSTER:
            w = self.cluster.workloads.get(("apps", "StatefulSet", ns, name))
            return f"its instances: {w.reason}" if w is not None and not w.running else None
        if group == gateway.GROUP:
            return gateway.behind(body, self._gateway_view)
        return None

    def _certificate_denier(self, body: Mapping[str, Any]) -> Workload | None:
        """With its auto-certificate on, the operator asks for the store's certificate as a CSR of the
        kubelet-serving signer (subject system:node:*, organization system:nodes, the only form
        kube-controller-manager signs for it) and approves it itself. kubelet-csr-approver judges every
        kubelet-serving CSR and denies one whose requester is not the node it names, unless told to
        leave those alone (IGNORE_NON_SYSTEM_NODE, default false); a denied CSR is final."""
        if dig(body, "spec", "certificates", "disableAutoCert", default=False):
            return None
        for approver in self.node_agents.approvers():
            env = {
                e["name"]: str(e.get("value", ""))
                for c in approver.template.containers()
                for e in c.get("env") or []
            }
            if "PROVIDER_REGEX" in env and env.get("IGNORE_NON_SYSTEM_NODE", "false").lower() != "true":
                return approver
        return None

    def _pools(self, namespace: str, name: str) -> list[tuple[str, Workload]]:
        return sorted(
            (k[3], w) for k, w in self.cluster.workloads.items()
            if w.operator == ("aistor.min.io", "ObjectStore") and k[2] == namespace and k[3].startswith(f"{name}-")
        )  # fmt: skip

    def _object_store_status(self, namespace: str, name: str) -> dict[str, Any]:
        """As the AIStor operator reports an ObjectStore (the fields of the MinIO operator's Tenant,
        which the ObjectStore CRD keeps): a state per server pool, and the store's once all are up."""
        if not self.cluster.controller_running("aistor.min.io", "ObjectStore"):
            return {}
        pools = self._pools(namespace, name)
        up = bool(pools) and all(w.running for _, w in pools)
        return {
            "currentState": "Initialized" if up else "Waiting for Pods to be ready",
            "healthStatus": "green" if up else "red",
            "pools": [
                {
                    "name": n.removeprefix(f"{name}-"),
                    "ssName": n,
                    "state": "PoolInitialized" if w.running else "PoolCreated",
                }
                for n, w in pools
            ],
        }


def _database_instances(body: Mapping[str, Any], owner: str) -> list[tuple[Key, Workload]]:
    """CloudNativePG's instances of a Cluster, as one workload: its pods (one per node where the
    anti-affinity is required), on the classes of its data and WAL volumes, each needing the bootstrap
    Secret. Not modelled: the operator's own Jobs (initdb, joins), the Services it makes."""
    meta, spec = body["metadata"], body.get("spec") or {}
    affinity = spec.get("affinity") or {}
    labels = {"cnpg.io/cluster": meta["name"]}
    pod: dict[str, Any] = {
        "nodeSelector": affinity.get("nodeSelector") or {},
        "tolerations": affinity.get("tolerations") or [],
        "containers": [{"name": "postgres", "resources": spec.get("resources") or {}}],
    }
    if affinity.get("enablePodAntiAffinity", True) and affinity.get("podAntiAffinityType") == "required":
        pod["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": affinity.get("topologyKey", "kubernetes.io/hostname"), "labelSelector": {"matchLabels": labels}}
        ]}}  # fmt: skip
    secret = dig(spec, "bootstrap", "initdb", "secret", "name")
    if secret:
        pod["volumes"] = [{"name": "bootstrap", "secret": {"secretName": secret}}]
    template = PodTemplate(
        "StatefulSet", meta["namespace"], meta["name"], int(spec.get("instances", 1)), {"labels": labels}, pod
    )
    classes = tuple(c for c in (dig(spec, v, "storageClass") for v in ("storage", "walStorage")) if c)
    workload = Workload(template, owner, claim_classes=classes, operator=CNPG_CLUSTER)
    return [(("apps", "StatefulSet", meta["namespace"], meta["name"]), workload)]


def _operator_workloads(body: Mapping[str, Any], owner: str) -> list[tuple[Key, Workload]]:
    """The StatefulSets an operator makes of a custom resource: AIStor's server pools, CloudNativePG's
    instances."""
    if (group_of(body), body.get("kind")) == CNPG_CLUSTER:
        return _database_instances(body, owner)
    if group_of(body) != "aistor.min.io" or body.get("kind") != "ObjectStore":
        return []
    meta, found = body["metadata"], []
    for pool in body["spec"].get("pools") or []:
        name = f"{meta['name']}-{pool['name']}"
        spec = {
            "nodeSelector": pool.get("nodeSelector") or {},
            "tolerations": pool.get("tolerations") or [],
            "affinity": pool.get("affinity") or {},
            "containers": [{"name": "minio", "resources": pool.get("resources") or {}}],
        }
        template = PodTemplate("StatefulSet", meta["namespace"], name, int(pool["servers"]), {}, spec)
        claim = dig(pool, "volumeClaimTemplate", "spec", "storageClassName")
        workload = Workload(
            template, owner, claim_classes=(claim,), operator=("aistor.min.io", "ObjectStore")
        )
        found.append((("apps", "StatefulSet", meta["namespace"], name), workload))
    return found


Find = Callable[[str, str, str], "Applied | None"]


def _follow(body: Mapping[str, Any], chain: tuple[Ref, ...], find: Find) -> Mapping[str, Any] | None:
    """The object a chain of references leads to from `body`, or None where a step names nothing there."""
    for ref in chain:
        name = pointer(body, ref.name)
        namespace = "" if ref.cluster_scoped else pointer(body, ref.namespace) if ref.namespace else None
        if namespace is None:
            namespace = dig(body, "metadata", "namespace", default="")
        found = find(ref.kind, str(namespace), str(name)) if name else None
        if found is None:
            return None
        body = found.body
    return body


def operand_workload(
    operand: Operand, body: Mapping[str, Any], owner: str, find: Find
) -> tuple[Key, Workload] | None:
    """The workload an operator makes of the resource `body` as its component declares it, or None
    where the operator leaves it alone (another controller's class)."""
    if group_of(body) != operand.group:
        return None
    meta = body["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace", ""))
    if operand.only_if is not None:
        chain, where, value = operand.only_if
        target = _follow(body, chain, find)
        if target is None or pointer(target, where) != value:
            return None
    config: Mapping[str, Any] = body
    if operand.config:
        config = next(
            (c for c in (_follow(body, chain, find) for chain in operand.config) if c is not None), {}
        )
    spec = {f: v for f, where in operand.pod.items() if (v := pointer(config, where)) is not None}
    container = {
        "name": "main",
        **operand.container,
        "resources": pointer(config, operand.resources) or operand.default_resources,
    }
    spec["containers"] = [container]
    labels = {k: v.format(name=name, namespace=namespace) for k, v in operand.labels.items()}
    if operand.pod_labels:
        labels.update(pointer(config, operand.pod_labels) or {})
    replicas = pointer(config, operand.replicas)
    target_ns = operand.namespace or namespace
    workload_name = operand.workload_name(namespace, name)
    template = PodTemplate(
        operand.workload, target_ns, workload_name,
        int(operand.default_replicas if replicas is None else replicas), {"labels": labels}, spec,
    )  # fmt: skip
    claim = pointer(config, operand.claim) if operand.claim else None
    classes = () if claim is None else (pointer(claim, "/spec/storageClassName"),)
    workload = Workload(template, owner, claim_classes=classes, operator=(operand.group, operand.kind))
    return ("apps", operand.workload, target_ns, workload_name), workload
