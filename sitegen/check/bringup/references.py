"""What the simulation does not find in dist/ and accepts anyway: a short, reviewed list.

A pod's reference (Secret, ConfigMap, ServiceAccount, PriorityClass, RuntimeClass, ...) resolves to an
object in dist/, to one a modelled controller makes (an ExternalSecret's or Certificate's Secret, the
GPU Operator's RuntimeClasses once its ClusterPolicy runs), or to an entry below; anything else is a
blocker naming the referrer. `sitegen bringup` prints the entries it used. A Secret a chart's own Job
writes is its component's declaration (`Component.job_secrets`), not an entry here.
"""

from __future__ import annotations

# Objects every cluster has without anything in dist/: (kind, namespace or "*" for every namespace, name).
EXTERNAL: dict[tuple[str, str, str], str] = {
    ("PriorityClass", "", "system-node-critical"): "built into every cluster (the API server creates it)",
    ("PriorityClass", "", "system-cluster-critical"): "built into every cluster (the API server creates it)",
    ("ConfigMap", "*", "kube-root-ca.crt"): "published into every namespace by kube-controller-manager",
}


def external(kind: str, namespace: str, name: str) -> str | None:
    """The reviewed reason an object no app renders exists anyway, or None."""
    return EXTERNAL.get((kind, namespace, name)) or EXTERNAL.get((kind, "*", name))
