"""What the simulation does not find in dist/ and accepts anyway: a short, reviewed list.

A pod's reference (Secret, ConfigMap, ServiceAccount, PriorityClass, RuntimeClass, ...) resolves to an
object in dist/, to one a modelled controller makes (an ExternalSecret's or Certificate's Secret, the
GPU Operator's RuntimeClasses once its ClusterPolicy runs), or to an entry below; anything else is a
blocker naming the referrer. `sitegen bringup` prints the entries it used.
"""

from __future__ import annotations

from dataclasses import dataclass

# Objects every cluster has without anything in dist/: (kind, namespace or "*" for every namespace, name).
EXTERNAL: dict[tuple[str, str, str], str] = {
    ("PriorityClass", "", "system-node-critical"): "built into every cluster (the API server creates it)",
    ("PriorityClass", "", "system-cluster-critical"): "built into every cluster (the API server creates it)",
    ("ConfigMap", "*", "kube-root-ca.crt"): "published into every namespace by kube-controller-manager",
}


@dataclass(frozen=True)
class Writer:
    """A Secret a chart's own Job writes: it exists once a Job of that name (a prefix: charts add a
    hash) in the same namespace has run to completion."""

    job: str
    why: str


# (namespace, Secret) -> the chart Job that writes it, as the pinned charts ship them.
WRITTEN_BY_JOBS: dict[tuple[str, str], Writer] = {
    ("argocd", "argocd-redis"): Writer("argocd-redis-secret-init", "argo-cd writes redis's password"),
    ("envoy-gateway-system", "envoy-gateway"): Writer(
        "envoy-gateway-gateway-helm-certgen", "Envoy Gateway's certgen writes its control-plane certificates"
    ),
    ("kube-system", "hubble-relay-client-certs"): Writer(
        "hubble-generate-certs", "Cilium's certgen writes Hubble's certificates"
    ),
    ("monitoring", "kube-prometheus-stack-admission"): Writer(
        "kube-prometheus-stack-admission-create", "the operator's admission webhook certificate"
    ),
}


def external(kind: str, namespace: str, name: str) -> str | None:
    """The reviewed reason an object no app renders exists anyway, or None."""
    return EXTERNAL.get((kind, namespace, name)) or EXTERNAL.get((kind, "*", name))
