"""What operators make of their custom resources and write into their status, as Argo CD's health
checks (argocd-cm, health.py) and the runbook read it: AIStor's ObjectStore (a StatefulSet per server
pool; a state per pool, and the store's once all are up), the GPU Operator's ClusterPolicy (ready once
the operator and Node Feature Discovery run) and the Network Operator's NicClusterPolicy (ready once
the operator runs).

Not modelled: the status of any other custom resource (Argo CD's rules alone judge it), and the operands
of the GPU and Network Operators as workloads: what they advertise on nodes is nodes.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.kube import PodTemplate, group_of
from sitegen.check.bringup.nodes import KUBELET_SERVING, Nodes
from sitegen.check.bringup.objects import Key, Workload, key_of


class Operators(Nodes):
    """Mixed into `Cluster` (cluster.py)."""

    def apply(self, body: Mapping[str, Any], owner: str) -> None:
        """The object, and the workloads an operator makes of it."""
        super().apply(body, owner)
        for pool_key, workload in _operator_workloads(body, owner):
            self.workloads.setdefault(pool_key, workload)

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
            denier = self._certificate_denier(body)
            if denier is not None:
                return (
                    f"{denier.template.ref} denies the operator's request for the store's TLS certificate "
                    f"(signer {KUBELET_SERVING}, requested by the operator, not system:node:<name>): set "
                    "IGNORE_NON_SYSTEM_NODE=true"
                )
            pools = self._pools(ns, name)
            return next((f"{w.template.ref}: {w.reason}" for _, w in pools if not w.running), None)
        return None

    def _certificate_denier(self, body: Mapping[str, Any]) -> Workload | None:
        """With its auto-certificate on, the operator asks for the store's certificate as a CSR of the
        kubelet-serving signer (subject system:node:*, organization system:nodes, the only form
        kube-controller-manager signs for it) and approves it itself. kubelet-csr-approver judges every
        kubelet-serving CSR and denies one whose requester is not the node it names, unless told to
        leave those alone (IGNORE_NON_SYSTEM_NODE, default false); a denied CSR is final."""
        if ((body.get("spec") or {}).get("certificates") or {}).get("disableAutoCert", False):
            return None
        for approver in self._approvers():
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
