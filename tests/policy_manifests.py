"""Manifests of the policy tests: a workload placed by node selector and tolerations, a namespace with
its pod-security labels, the site's pool labels and taints."""

from __future__ import annotations

from typing import Any

GPU_TAINT = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
AISTOR_TAINT = {"key": "dedicated", "operator": "Equal", "value": "aistor", "effect": "NoSchedule"}
CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
INFRA = {"node-role.kubernetes.io/infra": "true"}
INFRA_TAINT = {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
GPU = {"node-role.kubernetes.io/gpu": "true"}
COMPUTE = {"node-role.kubernetes.io/compute": "true"}

RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def container(image: str = "quay.io/example/app:1.2.3", **extra: Any) -> dict[str, Any]:
    return {
        "name": "app",
        "image": image,
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "securityContext": RESTRICTED,
        **extra,
    }


def workload(
    kind: str = "Deployment",
    name: str = "svc",
    selector: dict | None = None,
    tolerations=(),
    containers=None,
    **pod: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers or [container()], **pod}
    if selector is not None:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = list(tolerations)
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "demo"},
        "spec": body,
    }


def namespace(name: str, enforce: str | None = "restricted") -> dict[str, Any]:
    labels = (
        {}
        if enforce is None
        else {
            f"pod-security.kubernetes.io/{m}": enforce if m == "enforce" else "restricted"
            for m in ("enforce", "audit", "warn")
        }
    )
    # as synth writes every Namespace: never pruned nor deleted with an Application (APP-013)
    annotations = {"argocd.argoproj.io/sync-options": "Delete=false,Prune=false"}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
    }
