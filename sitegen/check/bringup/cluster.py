"""One cluster during its first install: nodes, the objects applied so far, and the controllers' work
on them (scheduling, readiness, secrets, certificates, volumes, Kueue admission, device plugins).

Every object applied is remembered with the Application (or runbook step) that applied it, so that a
blocker can name who would have provided what is missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from ipaddress import ip_address, ip_network
from typing import Any

import yaml

from constructs.cluster_manager import resource_of
from constructs.secrets import read_keys
from sitegen.check.bringup.kube import (
    BUILTIN,
    NOT_READY,
    Node,
    PodTemplate,
    add,
    claim_refs,
    config_map_refs,
    group_of,
    label_selector_matches,
    node_affinity_matches,
    pod_template,
    quantity,
    requests_of,
    secret_refs,
    untolerated,
)
from sitegen.compose.kube_yaml import KubeLoader

Key = tuple[str, str, str, str]  # group, kind, namespace, name

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
DIRECTPV = "directpv-min-io"  # provisions only on drives handed to it with `kubectl directpv init`
BUILTIN_PRIORITY_CLASSES = {"system-node-critical", "system-cluster-critical"}
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
# metrics-server's flags for how it reaches kubelets (DirectPV's --kubelet-dir-path is no client's)
KUBELET_CLIENT_FLAGS = (
    "--kubelet-preferred-address-types",
    "--kubelet-use-node-status-port",
    "--kubelet-port",
)
PREEMPTING = {"LowerPriority", "LowerOrNewerEqualPriority", "Any"}
# ClusterRoles every cluster has from Kubernetes' bootstrap policy (bootstrappolicy/policy.go), as far as
# dist/ binds them: nothing in dist/ renders them, so they are known here, by name, with their rules.
BOOTSTRAP_CLUSTER_ROLES: dict[str, list[dict[str, list[str]]]] = {
    "system:auth-delegator": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ],
}


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return group_of(body), str(body.get("kind")), str(meta.get("namespace", "")), str(meta["name"])


def show(key: Key) -> str:
    _, kind, ns, name = key
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


@dataclass
class Applied:
    body: Mapping[str, Any]
    owner: str  # the Application, or "runbook step N"


@dataclass
class Workload:
    """A pod template's fate: where its pods run, or why they do not."""

    template: PodTemplate
    owner: str
    placed: dict[str, int] = field(default_factory=dict)  # node -> pods
    running: bool = False
    done: bool = False  # a Job that ran to completion
    reason: str = "not reconciled yet"
    admitted: bool | None = None  # None: not managed by Kueue
    priority: int = 0
    claim_classes: tuple[str | None, ...] = ()  # storage classes of its volume claim templates
    operator: tuple[str, str] | None = None  # (group, kind) of the custom resource an operator expands


@dataclass
class Vault:
    """What the runbook's vault steps set up: per cluster auth mount, roles, policies, and keys."""

    keys: set[str] = field(default_factory=set)
    mounts: dict[str, dict[str, str]] = field(default_factory=dict)  # auth mount -> its config
    roles: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (mount, role) -> params
    policies: dict[str, set[str]] = field(default_factory=dict)  # policy -> readable keys


class Cluster:
    def __init__(self, name: str, vault: Vault) -> None:
        self.name = name
        self.vault = vault
        self.nodes: dict[str, Node] = {}
        self.objects: dict[Key, Applied] = {}  # apply() writes it, and its indexes
        self._kinds: dict[str, dict[Key, Applied]] = {}
        self._named: dict[tuple[str, str, str], Key] = {}  # kind, namespace, name -> key
        self._order: dict[Key, int] = {}
        self.crds: dict[tuple[str, str], tuple[str, str]] = {}  # (group, kind) -> (plural, owner)
        self.workloads: dict[Key, Workload] = {}
        self.drives_initialized = False
        self.server_tls_bootstrap = False  # kubelets ask the cluster CA for serving certificates
        # Secrets that objects in dist/ make once their app syncs: (namespace, name) -> the app
        self.made_later: dict[tuple[str, str], str] = {}
        self.remote = False  # managed by another cluster's Argo CD (a spoke)
        self.manager: tuple[str, str] | None = None  # the account that Argo CD manages it as
        self._producers: dict[tuple[str, str], Applied] = {}
        self._producers_at = -1
        self.cni_app = ""
        self.runtime_groups: dict[str, str] = {}  # API group -> the app whose running operator registers it
        self.log: list[str] = []
        self.devices_changed: set[str] = set()  # what the controllers did that an operator would want to see
        self.changes = 0  # bumped by every change of state: the simulation runs until it stops moving

    # ---- objects ---------------------------------------------------------------------------------
    def serves(self, group: str, kind: str) -> bool:
        if (group, kind) in BUILTIN or (group, kind) in self.crds:
            return True
        return group in self.runtime_groups and self.app_running(self.runtime_groups[group])

    def provider_of_kind(self, group: str, kind: str) -> str | None:
        return self.crds.get((group, kind), ("", self.runtime_groups.get(group)))[1]

    def has_namespace(self, name: str) -> bool:
        return name in ("default", "kube-system", "kube-public", "kube-node-lease") or (
            ("", "Namespace", "", name) in self.objects
        )

    def find(self, kind: str, namespace: str, name: str) -> Applied | None:
        key = self._named.get((kind, namespace, name))
        return None if key is None else self.objects[key]

    def of_kind(self, *kinds: str) -> list[tuple[Key, Applied]]:
        """The objects of these kinds, in the order they were first applied."""
        found = [item for kind in kinds for item in self._kinds.get(kind, {}).items()]
        return sorted(found, key=lambda item: self._order[item[0]]) if len(kinds) > 1 else found

    def apply(self, body: Mapping[str, Any], owner: str) -> None:
        key = key_of(body)
        if key not in self.objects or self.objects[key].body is not body:
            self.changes += 1
        applied = Applied(body, owner)
        self._order.setdefault(key, len(self._order))
        self.objects[key] = self._kinds.setdefault(key[1], {})[key] = applied
        self._named.setdefault((key[1], key[2], key[3]), key)  # the first group applied under the name
        if key[1] == "CustomResourceDefinition":
            spec = body["spec"]
            self.crds[(spec["group"], spec["names"]["kind"])] = (spec["names"]["plural"], owner)
        template = pod_template(body)
        if template is not None and key not in self.workloads:
            claims = (body.get("spec") or {}).get("volumeClaimTemplates") or []
            self.workloads[key] = Workload(
                template,
                owner,
                claim_classes=tuple((c.get("spec") or {}).get("storageClassName") for c in claims),
            )
        for pool_key, workload in _operator_workloads(body, owner):
            self.workloads.setdefault(pool_key, workload)

    def owner_apps(self, owner: str) -> list[Workload]:
        return [w for w in self.workloads.values() if w.owner == owner and w.template.kind != "CronJob"]

    def app_running(self, owner: str | None) -> bool:
        """The controllers an Application ships are up: every Deployment and StatefulSet of it runs."""
        if owner is None:
            return False
        found = [w for w in self.owner_apps(owner) if w.template.kind in ("Deployment", "StatefulSet")]
        return bool(found) and all(w.running for w in found)

    def controller_running(self, group: str, kind: str) -> bool:
        """The operator of a custom resource runs: the app that shipped its CRD has its controllers up."""
        return self.app_running(self.provider_of_kind(group, kind))

    # ---- what operators write into the status of their custom resources -------------------------
    def controller_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The status the modelled controller of `body` has written by now (what Argo CD's health
        scripts read); {} for kinds whose controller writes nothing the simulation models."""
        group, kind, ns, name = key_of(body)
        if (group, kind) == ("aistor.min.io", "ObjectStore"):
            return self._object_store_status(ns, name)
        if (group, kind) == ("nvidia.com", "ClusterPolicy"):
            # the operator reports ready once its operands run where NFD found NVIDIA devices
            nfd = self.provider_of_kind("nfd.k8s-sigs.io", "NodeFeature")
            ready = self.controller_running(group, kind) and self.app_running(nfd)
            return {"state": "ready" if ready else "notReady"}
        if (group, kind) == ("mellanox.com", "NicClusterPolicy"):
            return {"state": "ready" if self.controller_running(group, kind) else "notReady"}
        return {}

    def behind_status(self, body: Mapping[str, Any]) -> str | None:
        """Why the controller reports what it does, as far as the simulation knows (for the blocker:
        Argo CD shows only the status)."""
        group, kind, ns, name = key_of(body)
        if (group, kind) == ("aistor.min.io", "ObjectStore"):
            pools = self._pools(ns, name)
            return next((f"{w.template.ref}: {w.reason}" for _, w in pools if not w.running), None)
        return None

    def _pools(self, namespace: str, name: str) -> list[tuple[str, Workload]]:
        return sorted(
            (k[3], w) for k, w in self.workloads.items()
            if w.operator == ("aistor.min.io", "ObjectStore") and k[2] == namespace and k[3].startswith(f"{name}-")
        )  # fmt: skip

    def _object_store_status(self, namespace: str, name: str) -> dict[str, Any]:
        """As the AIStor operator reports an ObjectStore (the fields of the MinIO operator's Tenant,
        which the ObjectStore CRD keeps): a state per server pool, and the store's once all are up."""
        if not self.controller_running("aistor.min.io", "ObjectStore"):
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

    # ---- webhooks --------------------------------------------------------------------------------
    def service_ready(self, namespace: str, name: str) -> str | None:
        """None when the Service has a running backend, else why not."""
        service = self.find("Service", namespace, name)
        if service is None:
            return f"Service {namespace}/{name} does not exist"
        selector = (service.body.get("spec") or {}).get("selector") or {}
        for w in self.workloads.values():
            labels = w.template.labels
            if (
                w.template.namespace == namespace
                and w.running
                and selector
                and all(labels.get(k) == str(v) for k, v in selector.items())
            ):
                return None
        return f"no running pod behind Service {namespace}/{name}"

    def admission_blocker(self, body: Mapping[str, Any], resource: str | None = None) -> str | None:
        """Why the API server would refuse to create this object now (a webhook that cannot answer)."""
        group, kind, ns, _ = key_of(body)
        resource = resource or self.resource_name(group, kind)
        labels = (body.get("metadata") or {}).get("labels") or {}
        ns_labels = self.namespace_labels(ns) if ns else {}
        for (_, wkind, _, wname), applied in sorted(self.of_kind(
            "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"
        )):  # fmt: skip
            for hook in applied.body.get("webhooks") or []:
                if hook.get("failurePolicy", "Fail") != "Fail":
                    continue
                if not _rule_matches(hook.get("rules") or [], group, resource):
                    continue
                if ns and not label_selector_matches(hook.get("namespaceSelector"), ns_labels):
                    continue
                if not label_selector_matches(hook.get("objectSelector"), labels):
                    continue
                why = self.webhook_down(applied.body, hook)
                if why:
                    return f"{wkind} {wname} ({hook['name']}) cannot answer: {why}"
        return None

    def webhook_down(self, config: Mapping[str, Any], hook: Mapping[str, Any]) -> str | None:
        service = (hook.get("clientConfig") or {}).get("service")
        if service:
            down = self.service_ready(service["namespace"], service["name"])
            if down:
                return down
        inject = ((config.get("metadata") or {}).get("annotations") or {}).get(
            "cert-manager.io/inject-ca-from"
        )
        if inject:
            ns, _, name = inject.partition("/")
            if not self.certificate_ready(ns, name):
                return f"its CA comes from Certificate {inject}, which is not issued"
        return None

    def resource_name(self, group: str, kind: str) -> str:
        if (group, kind) in BUILTIN:
            return BUILTIN[(group, kind)]
        return self.crds.get((group, kind), (resource_of(kind), None))[0]

    def namespace_labels(self, name: str) -> dict[str, str]:
        applied = self.find("Namespace", "", name)
        own = dict(((applied.body.get("metadata") or {}).get("labels") or {}) if applied else {})
        return {**own, "kubernetes.io/metadata.name": name}

    # ---- secrets, certificates, volumes ----------------------------------------------------------
    def store_ready(self, kind: str, namespace: str, name: str) -> str | None:
        store = self.find(kind, "" if kind == "ClusterSecretStore" else namespace, name)
        if store is None:
            return f"{kind} {name} does not exist"
        if not self.controller_running("external-secrets.io", kind):
            return "the External Secrets controller is not running"
        auth = ((store.body["spec"].get("provider") or {}).get("vault") or {}).get("auth") or {}
        kube = auth.get("kubernetes")
        if kube is None:
            return None
        role = self.vault.roles.get((kube.get("mountPath", "kubernetes"), kube.get("role", "")))
        if role is None:
            return f"the vault has no role {kube.get('role')} on auth mount {kube.get('mountPath')}"
        account = kube.get("serviceAccountRef") or {}
        # a namespaced store's account is in the store's namespace, whatever the reference says
        account_ns = namespace if kind == "SecretStore" else account.get("namespace", "")
        if account.get("name") not in role.get("bound_service_account_names", "").split(","):
            return f"vault role {kube.get('role')} is not bound to service account {account.get('name')}"
        if account_ns not in role.get("bound_service_account_namespaces", "").split(","):
            return f"vault role {kube.get('role')} is not bound to namespace {account_ns}"
        if self.find("ServiceAccount", account_ns, account.get("name", "")) is None:
            return f"ServiceAccount {account_ns}/{account.get('name')} does not exist"
        return self._vault_login(kube.get("mountPath", "kubernetes"), (account_ns, account.get("name", "")))

    def _vault_login(self, mount: str, account: tuple[str, str]) -> str | None:
        """Vault's Kubernetes auth reviews the login token with the TokenReview API of the cluster: with
        the mount's token_reviewer_jwt when one is set, else with the login token itself (Vault outside
        the cluster), whose account must then be allowed to create tokenreviews."""
        config = self.vault.mounts.get(mount)
        if config is None or not config.get("kubernetes_host"):
            return f"the vault's auth mount {mount} is not configured (no kubernetes_host)"
        if config.get("token_reviewer_jwt"):
            return None  # a reviewer of its own: its rights are the runbook's to give (not modelled)
        if not self.may(account, "create", "authentication.k8s.io", "tokenreviews"):
            return (
                f"the vault login as {account[0]}/{account[1]} is refused: mount {mount} reviews a login with "
                "the login's own token, and that account may not create tokenreviews "
                "(no binding to system:auth-delegator)"
            )
        return None

    def readable_keys(self, store: Mapping[str, Any]) -> set[str]:
        kube = (((store["spec"].get("provider") or {}).get("vault") or {}).get("auth") or {}).get(
            "kubernetes"
        ) or {}
        role = self.vault.roles.get((kube.get("mountPath", "kubernetes"), kube.get("role", ""))) or {}
        return {k for p in role.get("policies", "").split(",") for k in self.vault.policies.get(p, set())}

    def external_secret_ready(self, body: Mapping[str, Any]) -> str | None:
        ref = body["spec"].get("secretStoreRef") or {}
        kind, name = ref.get("kind", "SecretStore"), ref["name"]
        ns = body["metadata"].get("namespace", "")
        down = self.store_ready(kind, ns, name)
        if down:
            return down
        store = self.find(kind, "" if kind == "ClusterSecretStore" else ns, name)
        assert store is not None
        readable = self.readable_keys(store.body)
        for key in sorted(read_keys(body)):
            if key not in self.vault.keys:
                return f"the vault holds no {key}"
            if readable and key not in readable:
                return f"no policy of the store's role reads {key}"
        return None

    def certificate_ready(self, namespace: str, name: str) -> bool:
        cert = self.find("Certificate", namespace, name)
        return cert is not None and self.certificate_blocker(cert.body) is None

    def certificate_blocker(self, body: Mapping[str, Any]) -> str | None:
        if not self.controller_running("cert-manager.io", "Certificate"):
            return "cert-manager is not running"
        issuer = body["spec"]["issuerRef"]
        kind = issuer.get("kind", "Issuer")
        found = self.find(
            kind, "" if kind == "ClusterIssuer" else body["metadata"]["namespace"], issuer["name"]
        )
        if found is None:
            return f"{kind} {issuer['name']} does not exist"
        ca = (found.body["spec"].get("ca") or {}).get("secretName")
        if ca:
            missing = self.secret_blocker(self.issuer_namespace(found), ca)
            if missing:
                return f"{kind} {issuer['name']}'s CA Secret {ca}: {missing}"
        return None

    def issuer_namespace(self, issuer: Applied) -> str:
        ns = issuer.body["metadata"].get("namespace")
        if ns:
            return str(ns)
        # a ClusterIssuer reads its Secret from cert-manager's own namespace
        owner = self.provider_of_kind("cert-manager.io", "ClusterIssuer")
        return next((w.template.namespace for w in self.owner_apps(owner or "")), "cert-manager")

    @staticmethod
    def made_secret(body: Mapping[str, Any]) -> tuple[str, str] | None:
        """(namespace, name) of the Secret an object makes: itself, an ExternalSecret's target, a
        Certificate's."""
        kind, meta, spec = body.get("kind"), body.get("metadata") or {}, body.get("spec") or {}
        ns = str(meta.get("namespace", ""))
        if kind == "Secret":
            return ns, str(meta["name"])
        if kind == "ExternalSecret":
            return ns, str((spec.get("target") or {}).get("name") or meta["name"])
        if kind == "Certificate":
            return ns, str(spec["secretName"])
        return None

    def _secret_producers(self) -> dict[tuple[str, str], Applied]:
        """(namespace, Secret name) -> the object that makes it: a Secret, ExternalSecret or Certificate."""
        if self._producers_at != len(self.objects):
            self._producers = {}
            for applied in self.objects.values():
                made = self.made_secret(applied.body)
                if made is not None:
                    self._producers[made] = applied
            self._producers_at = len(self.objects)
        return self._producers

    def secret_blocker(self, namespace: str, name: str, *, known_only: bool = False) -> str | None:
        """None when the Secret is there, else why not. With `known_only`, a Secret nothing applied
        here makes counts as there (a chart's controller makes it; that is not modelled)."""
        producer = self._secret_producers().get((namespace, name))
        if producer is None and (namespace, name) in self.made_later:
            return f"{self.made_later[(namespace, name)]} makes it and has not synced"
        if producer is None:
            return None if known_only else f"nothing makes Secret {namespace}/{name}"
        kind = producer.body["kind"]
        if kind == "ExternalSecret":
            return self.external_secret_ready(producer.body)
        if kind == "Certificate":
            return self.certificate_blocker(producer.body)
        return None

    def claim_blocker(self, storage_class: str | None, consumer: bool) -> str | None:
        if not storage_class:
            return "no storageClassName (no default StorageClass is assumed)"
        sc = self.find("StorageClass", "", storage_class)
        if sc is None:
            return f"StorageClass {storage_class} does not exist"
        provisioner = sc.body.get("provisioner", "")
        driver = self.find("CSIDriver", "", provisioner)
        if driver is None:
            return f"no CSIDriver {provisioner} (StorageClass {storage_class})"
        if not self.app_running(driver.owner):
            return f"the {provisioner} controller ({driver.owner}) is not running"
        if provisioner == DIRECTPV and not self.drives_initialized:
            return "DirectPV has no drives (`kubectl directpv init` has not run)"
        if sc.body.get("volumeBindingMode") == "WaitForFirstConsumer" and not consumer:
            return f"StorageClass {storage_class} binds on first consumer and none exists"
        return None

    def claim_consumed(self, namespace: str, name: str) -> bool:
        return any(
            w.template.namespace == namespace and name in claim_refs(w.template)
            for w in self.workloads.values()
        )

    def load_balancer_blocker(self) -> str | None:
        """Cilium's LB IPAM hands out the address: it needs a pool and the CNI running."""
        if not self.of_kind("CiliumLoadBalancerIPPool"):
            return "no CiliumLoadBalancerIPPool gives it an address"
        if not self.app_running(self.cni_app):
            return "Cilium is not running"
        return None

    def claim_status(self, namespace: str, name: str, consumer: bool = True) -> str | None:
        claim = self.find("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return f"PersistentVolumeClaim {namespace}/{name} does not exist"
        return self.claim_blocker(claim.body["spec"].get("storageClassName"), consumer)

    # ---- nodes and devices -----------------------------------------------------------------------
    def runtime_class_exists(self, name: str) -> bool:
        if self.find("RuntimeClass", "", name):
            return True
        # the GPU Operator creates its runtime classes once its ClusterPolicy is reconciled
        return name.startswith("nvidia") and self._cluster_policy() is not None

    def _cluster_policy(self) -> Mapping[str, Any] | None:
        found = self.of_kind("ClusterPolicy")
        if not found or not self.controller_running("nvidia.com", "ClusterPolicy"):
            return None
        return found[0][1].body

    def _node_runs(self, node: Node, owner: str, kind: str = "DaemonSet") -> bool:
        """A pod of the app's DaemonSet runs on the node (whatever its pods elsewhere do)."""
        return node.reporting and any(
            node.name in w.placed
            for w in self.workloads.values()
            if w.owner == owner and w.template.kind == kind
        )

    def refresh_devices(self, rails: Mapping[str, set[str]]) -> None:
        """Extended resources appear where the device plugins the operators deploy can run."""
        policy = self._cluster_policy()
        # the operator places its device plugin where Node Feature Discovery labelled an NVIDIA device
        nfd = self.provider_of_kind("nfd.k8s-sigs.io", "NodeFeature")
        for node in self.nodes.values():
            if policy is not None and node.capacity.get("hardware/gpu"):
                spec = policy["spec"].get("daemonsets") or {}
                tolerated = not untolerated(
                    spec.get("tolerations") or [], [t for t in node.taints if t not in NOT_READY]
                )
                labelled = nfd is not None and self._node_runs(node, nfd)
                self._set(
                    node, "nvidia.com/gpu", node.capacity["hardware/gpu"] if tolerated and labelled else 0
                )
            self._rdma(node, rails.get(node.name, set()))

    def _rdma(self, node: Node, named_interfaces: set[str]) -> None:
        cluster_policies = self.of_kind("NicClusterPolicy")
        if not cluster_policies or not self.controller_running("mellanox.com", "NicClusterPolicy"):
            return
        cp = cluster_policies[0][1].body["spec"]
        taints = [t for t in node.taints if t not in NOT_READY]
        admitted = node_affinity_matches(
            {"affinity": {"nodeAffinity": cp.get("nodeAffinity") or {}}}, node.labels
        )
        admitted = admitted and not untolerated(cp.get("tolerations") or [], taints)
        for _, applied in self.of_kind("NicNodePolicy"):
            spec = applied.body["spec"]
            if not all(node.labels.get(k) == str(v) for k, v in (spec.get("nodeSelector") or {}).items()):
                continue
            config = _device_plugin_config((spec.get("rdmaSharedDevicePlugin") or {}).get("config") or "{}")
            for entry in config.get("configList") or []:
                names = set((entry.get("selectors") or {}).get("ifNames") or [])
                count = int(entry.get("rdmaHcaMax", 0)) if admitted and names <= named_interfaces else 0
                self._set(node, f"rdma/{entry['resourceName']}", count)

    def _set(self, node: Node, resource: str, amount: int) -> None:
        if node.capacity.get(resource, 0) != amount:
            node.capacity[resource] = amount
            self.devices_changed.add(resource)
            self.changes += 1

    def device_report(self) -> list[str]:
        out = []
        for resource in sorted(self.devices_changed):
            nodes = [n for n in self.nodes.values() if n.capacity.get(resource)]
            per = sorted({n.capacity[resource] for n in nodes})
            out.append(f"{resource}: {'/'.join(map(str, per)) or 0} on {len(nodes)} nodes")
        self.devices_changed.clear()
        return out

    def refresh_readiness(self) -> None:
        """A node turns Ready once the CNI's agents run on it and its operator runs (it hands out the
        pod CIDRs). Both are on the host network: nothing else of the CNI can run before."""
        host = [w for w in self.owner_apps(self.cni_app) if w.template.host_network]
        operator_up = any(w.template.kind == "Deployment" for w in host) and all(
            w.running for w in host if w.template.kind == "Deployment"
        )
        agents = [w for w in host if w.template.kind == "DaemonSet"]
        for node in self.nodes.values():
            ready = operator_up and bool(agents) and all(w.running and node.name in w.placed for w in agents)
            if ready and node.reporting and not node.ready:
                node.ready = True
                node.taints = [t for t in node.taints if t not in NOT_READY]
                self.changes += 1

    # ---- RBAC ------------------------------------------------------------------------------------
    def _cluster_role_bindings(self) -> list[tuple[str, tuple[str, str]]]:
        """(ClusterRole, service account as (namespace, name)) for every ClusterRoleBinding subject."""
        return [
            ((a.body.get("roleRef") or {}).get("name", ""), (s.get("namespace", ""), s.get("name", "")))
            for _, a in self.of_kind("ClusterRoleBinding")
            for s in a.body.get("subjects") or []
            if s.get("kind") == "ServiceAccount"
        ]

    def may(self, account: tuple[str, str], verb: str, group: str, resource: str) -> bool:
        """Whether the ClusterRoles bound to service account (namespace, name) allow `verb` on every
        object of the resource."""
        roles = {role for role, bound in self._cluster_role_bindings() if bound == account}
        rules = [r for name in roles for r in BOOTSTRAP_CLUSTER_ROLES.get(name, [])]
        rules += [
            r
            for _, a in self.of_kind("ClusterRole")
            if a.body["metadata"]["name"] in roles
            for r in a.body.get("rules") or []
        ]
        return any(
            {"*", group} & set(r.get("apiGroups") or [])
            and {"*", resource} & set(r.get("resources") or [])
            and {"*", verb} & set(r.get("verbs") or [])
            and not r.get("resourceNames")
            for r in rules
        )

    # ---- kubelet serving certificates -----------------------------------------------------------
    def _approvers(self) -> list[Workload]:
        """Running workloads whose service account is bound to approve kubelet-serving requests by name
        (an operator that may approve any signer, like AIStor's for its own CSRs, approves no kubelet)."""
        roles = {
            a.body["metadata"]["name"]
            for _, a in self.of_kind("ClusterRole")
            if any(
                "signers" in (r.get("resources") or [])
                and "approve" in (r.get("verbs") or [])
                and KUBELET_SERVING in (r.get("resourceNames") or [])  # named: not any signer's approver
                for r in a.body.get("rules") or []
            )
        }
        accounts = {account for role, account in self._cluster_role_bindings() if role in roles}
        return [
            w for w in self.workloads.values()
            if w.running and (w.template.namespace, w.template.spec.get("serviceAccountName", "default")) in accounts
        ]  # fmt: skip

    def refresh_serving_certificates(self) -> None:
        """kube-controller-manager signs a kubelet's serving CSR once something approves it: an
        approver whose checks (node name pattern, IP prefixes of kubelet-csr-approver) admit the node."""
        waiting = [n for n in self.nodes.values() if not n.serving_certificate]
        if not waiting or not self.server_tls_bootstrap:
            return
        for approver in self._approvers():
            env = {
                e["name"]: str(e.get("value", ""))
                for c in approver.template.containers()
                for e in c.get("env") or []
            }
            names = re.compile(env.get("PROVIDER_REGEX", ".*"))
            prefixes = [
                ip_network(p.strip()) for p in env.get("PROVIDER_IP_PREFIXES", "0.0.0.0/0").split(",")
            ]
            approved = [
                n for n in waiting
                if names.search(n.name) and n.address and any(ip_address(n.address) in p for p in prefixes)
            ]  # fmt: skip
            for node in approved:
                node.serving_certificate = True
            if approved:
                self.changes += 1
                self.log.append(
                    (approver.owner, f"approved the serving certificates of {len(approved)} kubelet(s)")
                )
            waiting = [n for n in waiting if not n.serving_certificate]

    def kubelet_client_blocker(self, w: Workload) -> str | None:
        """A client of the kubelets that verifies them (metrics-server without --kubelet-insecure-tls)
        is not Ready while a kubelet serves no certificate of the cluster CA."""
        args = [
            str(a)
            for c in w.template.containers()
            for a in [*(c.get("args") or []), *(c.get("command") or [])]
        ]
        if not any(a.startswith(KUBELET_CLIENT_FLAGS) for a in args) or "--kubelet-insecure-tls" in args:
            return None
        waiting = sorted(n.name for n in self.nodes.values() if not n.serving_certificate)
        if not waiting:
            return None
        if not self.server_tls_bootstrap:
            return "cannot verify the kubelets: they serve self-signed certificates (no serverTLSBootstrap)"
        return (
            f"cannot verify {len(waiting)} kubelet(s) ({waiting[0]}, ...): their serving certificate "
            f"requests wait for an approver of {KUBELET_SERVING}"
        )

    # ---- workloads -------------------------------------------------------------------------------
    def reconcile(self, rails: Mapping[str, set[str]]) -> None:
        """Run the controllers until nothing changes."""
        while True:
            before = self.changes
            self.refresh_readiness()
            self.refresh_devices(rails)
            self.refresh_serving_certificates()
            self._admit()
            for key in sorted(self.workloads):
                self._start(key, self.workloads[key])
            if self.changes == before:
                return

    def pod_blocker(self, w: Workload) -> str | None:
        """Why pods of this template cannot be created or start, nodes aside."""
        t = w.template
        if not self.has_namespace(t.namespace):
            return f"namespace {t.namespace} does not exist"
        down = self.admission_blocker({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "namespace": t.namespace, "name": t.name, "labels": t.labels}})  # fmt: skip
        if down:
            return down
        account = t.spec.get("serviceAccountName", "default")
        if account != "default" and self.find("ServiceAccount", t.namespace, account) is None:
            return f"ServiceAccount {account} does not exist"
        priority = t.spec.get("priorityClassName")
        if (
            priority
            and priority not in BUILTIN_PRIORITY_CLASSES
            and not self.find("PriorityClass", "", priority)
        ):
            return f"PriorityClass {priority} does not exist"
        runtime = t.spec.get("runtimeClassName")
        if runtime and not self.runtime_class_exists(runtime):
            return f"RuntimeClass {runtime} does not exist"
        for name in sorted(secret_refs(t)):
            why = self.secret_blocker(t.namespace, name, known_only=True)
            if why is not None:
                return f"Secret {name} is not there: {why}"
        maps = {n for (_, k, ns, n) in self.objects if k == "ConfigMap" and ns == t.namespace}
        producers = {n for (_, k, ns, n) in self.objects if k == "ConfigMap"}
        for name in sorted(config_map_refs(t)):
            if name in producers and name not in maps:
                return f"ConfigMap {name} is not in namespace {t.namespace}"
        for name in sorted(claim_refs(t)):
            why = self.claim_status(t.namespace, name)
            if why:
                return why
        for storage_class in w.claim_classes:
            why = self.claim_blocker(storage_class, consumer=True)
            if why:
                return f"volume claim: {why}"
        if w.operator and not self.controller_running(*w.operator):
            return f"the {w.operator[1]} operator is not running"
        return self.quota_blocker(w) or self.kubelet_client_blocker(w)

    def quota_blocker(self, w: Workload) -> str | None:
        """The namespace's ResourceQuotas refuse the pods still to create: a request they bound that a
        container leaves out, or more than is left beside the namespace's running pods."""
        t = w.template
        quotas = [
            a.body for (_, k, ns, _), a in self.objects.items() if k == "ResourceQuota" and ns == t.namespace
        ]
        if not quotas:
            return None
        pods = (1 if t.daemon else max(t.replicas, 1)) - sum(w.placed.values())
        used: dict[str, int] = {}
        for other in self.workloads.values():
            if other is not w and other.template.namespace == t.namespace and other.running:
                running = sum(other.placed.values())
                add(used, {**{k: v * running for k, v in other.template.requests.items()}, "pods": running})
        need = {**{k: v * pods for k, v in t.requests.items()}, "pods": pods}
        for quota in quotas:
            name = quota["metadata"]["name"]
            for key, limit in sorted(((quota.get("spec") or {}).get("hard") or {}).items()):
                resource = _pod_quota_resource(key)
                if resource is None:
                    continue
                if resource in ("cpu", "memory"):
                    bare = [
                        c.get("name")
                        for c in t.containers()
                        if resource not in requests_of(c.get("resources"))
                    ]
                    if bare:
                        return f"ResourceQuota {name} bounds {resource}: container {bare[0]} requests none"
                hard = quantity(limit, milli=resource == "cpu")
                if used.get(resource, 0) + need.get(resource, 0) > hard:
                    short = _usage(used, {resource: need.get(resource, 0)}, {resource: hard})
                    return f"ResourceQuota {name}: {short}"
        return None

    def objects_body(self, w: Workload) -> Mapping[str, Any]:
        t = w.template
        found = self.find(t.kind, t.namespace, t.name)
        return found.body if found else {}

    def _start(self, key: Key, w: Workload) -> None:
        if w.running or w.done or w.template.kind == "CronJob":
            return
        if w.admitted is False:
            return
        if w.admitted is None and (self.objects_body(w).get("spec") or {}).get("suspend"):
            w.reason = "suspended, and no Kueue manages its namespace to admit it"
            return
        lost = [n for n in sorted(w.placed) if not self.nodes[n].reporting]
        why = f"its pod on {lost[0]} is not ready: the node is NotReady" if lost else self.pod_blocker(w)
        if why is None:
            why = self._place(w)
        if why is None:
            w.running = True
            w.reason = ""
            if w.template.kind == "Job":
                self._finish(w)
            self.changes += 1
        elif why != w.reason:
            w.reason = why

    def _candidates(self, t: PodTemplate) -> tuple[list[Node], dict[str, int]]:
        refused: dict[str, int] = {}
        found = []
        for node in self.nodes.values():
            why = t.why_not(node)
            if why is None:
                found.append(node)
            else:
                refused[why] = refused.get(why, 0) + 1
        return found, refused

    def _place(self, w: Workload) -> str | None:
        t = w.template
        nodes, refused = self._candidates(t)
        requests = {**t.requests, "pods": 1}
        if t.daemon:
            if not nodes:
                return f"no node takes it ({_summary(refused)})"
            for node in nodes:
                if node.name in w.placed:
                    continue
                short = node.fits(requests)
                if short:
                    return f"{short} does not fit on {node.name} ({_free(node, short)})"
                if not (node.ready or t.host_network):
                    return f"{node.name} is NotReady (no CNI yet) and the pod is not on the host network"
            for node in nodes:
                if node.name not in w.placed:
                    add(node.used, requests)
                    w.placed[node.name] = 1
            return None
        pending = t.replicas - sum(w.placed.values())
        while pending > 0:
            usable = [
                n for n in nodes
                if (n.ready or t.host_network) and not n.fits(requests)
                and not (t.one_per_node and n.name in w.placed)
            ]  # fmt: skip
            if not usable:
                return self._unplaceable(t, nodes, refused, requests, w)
            node = max(usable, key=lambda n: (_share(n), n.name))
            add(node.used, requests)
            w.placed[node.name] = w.placed.get(node.name, 0) + 1
            pending -= 1
        return None

    def _unplaceable(
        self,
        t: PodTemplate,
        nodes: list[Node],
        refused: dict[str, int],
        requests: dict[str, int],
        w: Workload,
    ) -> str:
        if not nodes:
            return f"no node takes it ({_summary(refused)})"
        ready = [n for n in nodes if n.ready or t.host_network]
        if not ready:
            return f"its {len(nodes)} candidate nodes are NotReady (no CNI yet)"
        short = sorted({n.fits(requests) for n in ready if n.fits(requests)} - {None})
        if short:
            best = max(ready, key=lambda n: n.free(short[0]))
            return (
                f"{short[0]} does not fit: {_amount(short[0], requests[short[0]])} per pod, at most "
                f"{_free(best, short[0])} on any of {len(ready)} candidate nodes"
            )
        return f"one pod per node and only {len(ready)} candidate nodes"

    def lose_node(self, name: str) -> list[str]:
        """A node stops reporting (a GPU node rebooting for a driver upgrade, a host down for an hour):
        the node lifecycle controller taints it not-ready. A DaemonSet's pod there is unavailable and a
        StatefulSet's stays bound to it until it returns; a Deployment's pods are evicted (after the
        default 300 s toleration) and created again where they fit. Returns what it affected."""
        node = self.nodes[name]
        node.ready = node.reporting = False
        node.taints = [*node.taints, *(t for t in NOT_READY if t not in node.taints)]
        affected = []
        for w in self.workloads.values():
            if name not in w.placed or not w.running:
                continue
            if w.template.daemon or w.template.kind == "StatefulSet":
                w.running = False
                w.reason = f"its pod on {name} is not ready: the node is NotReady"
            else:
                self._release(w)
                w.reason = f"evicted from {name} (NotReady)"
            affected.append(w.template.ref)
            self.changes += 1
        return affected

    def evict(self, w: Workload, why: str) -> None:
        """Its pods are deleted (a drain): the controller creates them again where they fit."""
        self._release(w)
        w.reason = why
        self.changes += 1

    def _release(self, w: Workload) -> None:
        """Give back what the workload's pods took on their nodes."""
        requests = {**w.template.requests, "pods": 1}
        for node, pods in w.placed.items():
            add(self.nodes[node].used, {k: v * pods for k, v in requests.items()}, -1)
        w.placed.clear()
        w.running = False

    def _finish(self, w: Workload) -> None:
        """A Job that ran completes and gives its nodes and quota back."""
        self._release(w)
        w.done = True
        self.log.append((w.owner, f"{w.template.ref} ran to completion"))
        w.admitted = None if w.admitted is None else False

    # ---- Kueue -----------------------------------------------------------------------------------
    def queue_of(self, w: Workload) -> str | None:
        """The queue of a workload Kueue manages: labelled, in a namespace Kueue's configuration selects."""
        body = self.objects_body(w)
        labels = {**w.template.labels, **((body.get("metadata") or {}).get("labels") or {})}
        if KUEUE_QUEUE not in labels:
            return None
        selector = self._kueue_namespaces()
        if selector is None or not label_selector_matches(
            selector, self.namespace_labels(w.template.namespace)
        ):
            return None
        return labels[KUEUE_QUEUE]

    def _kueue_namespaces(self) -> Mapping[str, Any] | None:
        """Kueue's managedJobsNamespaceSelector (its default when unset); None without Kueue."""
        for _, applied in self.of_kind("ConfigMap"):
            text = (applied.body.get("data") or {}).get("controller_manager_config.yaml")
            if text:
                config = _kueue_config(text)
                default = {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                    "values": ["kube-system", applied.body["metadata"]["namespace"]],
                }]}  # fmt: skip
                return config.get("managedJobsNamespaceSelector") or default
        return None

    def _admit(self) -> None:
        managed = [(k, w) for k, w in sorted(self.workloads.items()) if self.queue_of(w) and not w.done]
        if not managed:
            return
        for _, w in managed:
            if w.admitted is None:
                w.admitted = False
                w.priority = self._priority(w)
        for _, w in sorted(managed, key=lambda kw: (-kw[1].priority, kw[0])):
            if w.admitted:
                continue
            why = self._admission(w, managed)
            if why is None:
                w.admitted = True
                w.reason = "admitted by Kueue"
                self.log.append((w.owner, f"Kueue admitted {w.template.ref} (priority {w.priority})"))
                self.changes += 1
            elif w.reason != why:
                w.reason = why

    def _priority(self, w: Workload) -> int:
        body = self.objects_body(w)
        labels = {**w.template.labels, **((body.get("metadata") or {}).get("labels") or {})}
        name = labels.get(KUEUE_PRIORITY)
        found = self.find("WorkloadPriorityClass", "", name) if name else None
        return int(found.body.get("value", 0)) if found else 0

    def _admission(self, w: Workload, managed: list[tuple[Key, Workload]]) -> str | None:
        if not self.controller_running("kueue.x-k8s.io", "ClusterQueue"):
            return "Kueue is not running"
        queue_name = self.queue_of(w)
        local = self.find("LocalQueue", w.template.namespace, queue_name or "")
        if local is None:
            return f"LocalQueue {w.template.namespace}/{queue_name} does not exist"
        cq_name = local.body["spec"]["clusterQueue"]
        cq = self.find("ClusterQueue", "", cq_name)
        if cq is None:
            return f"ClusterQueue {cq_name} does not exist"
        quota = _quota(cq.body)
        need = _total(w)
        for resource in sorted(need):
            if resource not in quota:
                return f"ClusterQueue {cq_name} covers no {resource}"
        peers = [p for _, p in managed if p is not w and p.admitted and self._cluster_queue(p) == cq_name]
        used: dict[str, int] = {}
        for p in peers:
            add(used, _total(p))
        if all(used.get(r, 0) + n <= quota[r] for r, n in need.items()):
            return None
        policy = (cq.body["spec"].get("preemption") or {}).get("withinClusterQueue", "Never")
        if policy not in PREEMPTING:
            return f"ClusterQueue {cq_name} is full and preempts nothing ({_usage(used, need, quota)})"
        for victim in sorted((p for p in peers if p.priority < w.priority), key=lambda p: p.priority):
            add(used, _total(victim), -1)
            self._evict(victim, f"preempted by {w.template.ref}")
            if all(used.get(r, 0) + n <= quota[r] for r, n in need.items()):
                return None
        return f"ClusterQueue {cq_name} cannot make room ({_usage(used, need, quota)})"

    def _cluster_queue(self, w: Workload) -> str | None:
        local = self.find("LocalQueue", w.template.namespace, self.queue_of(w) or "")
        return local.body["spec"]["clusterQueue"] if local else None

    def _evict(self, w: Workload, why: str) -> None:
        self._release(w)
        w.admitted = False
        w.reason = why
        self.log.append((w.owner, f"{w.template.ref} {why}"))
        self.changes += 1


def _operator_workloads(body: Mapping[str, Any], owner: str) -> list[tuple[Key, Workload]]:
    """The StatefulSets an operator makes of a custom resource: AIStor's server pools."""
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
        claim = ((pool.get("volumeClaimTemplate") or {}).get("spec") or {}).get("storageClassName")
        workload = Workload(
            template, owner, claim_classes=(claim,), operator=("aistor.min.io", "ObjectStore")
        )
        found.append((("apps", "StatefulSet", meta["namespace"], name), workload))
    return found


@cache
def _device_plugin_config(text: str) -> dict[str, Any]:
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _kueue_config(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=KubeLoader) or {}


def _rule_matches(rules: Iterable[Mapping[str, Any]], group: str, resource: str) -> bool:
    for rule in rules:
        if "CREATE" not in (rule.get("operations") or []) and "*" not in (rule.get("operations") or []):
            continue
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        if ("*" in groups or group in groups) and ("*" in resources or resource in resources):
            return True
    return False


def _pod_quota_resource(key: str) -> str | None:
    """The pod resource a ResourceQuota key bounds; None for claims, object counts and limits."""
    if key in ("pods", "cpu", "memory"):
        return key
    if key.startswith("requests.") and not key.endswith(".storage"):
        return key.removeprefix("requests.")
    return None


def _quota(cluster_queue: Mapping[str, Any]) -> dict[str, int]:
    quota: dict[str, int] = {}
    for group in cluster_queue["spec"].get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                add(quota, {r["name"]: quantity(r["nominalQuota"], milli=r["name"] == "cpu")})
    return quota


def _total(w: Workload) -> dict[str, int]:
    return {k: v * max(w.template.replicas, 1) for k, v in w.template.requests.items()}


def _usage(used: Mapping[str, int], need: Mapping[str, int], quota: Mapping[str, int]) -> str:
    short = [r for r in sorted(need) if used.get(r, 0) + need[r] > quota[r]]
    return ", ".join(
        f"{r}: {_amount(r, used.get(r, 0))} in use + {_amount(r, need[r])} asked > {_amount(r, quota[r])}"
        for r in short
    )


def _share(node: Node) -> float:
    alloc = node.allocatable("cpu") or 1
    return node.free("cpu") / alloc


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:g} cores"
    if resource in ("memory", "ephemeral-storage"):
        return f"{value / 1e9:.1f} GB"
    return str(value)


def _free(node: Node, resource: str) -> str:
    return f"{_amount(resource, max(node.free(resource), 0))} free of {_amount(resource, node.allocatable(resource))}"


def _summary(refused: Mapping[str, int]) -> str:
    return (
        "; ".join(f"{n} nodes: {why}" for why, n in sorted(refused.items(), key=lambda kv: -kv[1]))
        or "no nodes"
    )
