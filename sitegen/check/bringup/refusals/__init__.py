"""What the API server, its admission plugins and the kubelet refuse, beside the webhooks, the
ValidatingAdmissionPolicies and Pod Security (admission.py, cluster.py): one small module per real
system's rule, each naming the reason that system gives.

- `create_refusal`: every object a sync or the runbook's `kubectl apply` creates, once its namespace
  and kind exist: the API server's validation of the object, then the admission plugins the cluster's
  kubeadm configuration enables (`ClusterObjects.admission_plugins`).
- `pod_refusal`: the pods a workload's controller creates and the kubelet runs: a refusal keeps the
  workload from running, with the reason (a controller retries; nothing becomes Ready).

A module lists its checks in `ON_CREATE` / `ON_POD`; this package only collects them (no module here
imports it back).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals import (
    admission_plugins,
    cilium,
    controllers,
    crd_versions,
    csi,
    gateway,
    kubelet,
    multus,
    validation,
    wiring,
)

# The API server's own validation first, then admission, as kube-apiserver orders them
_MODULES = (
    validation,
    crd_versions,
    admission_plugins,
    wiring,
    gateway,
    csi,
    kubelet,
    controllers,
    multus,
    cilium,
)
ON_CREATE = tuple(check for module in _MODULES for check in module.ON_CREATE)
ON_POD = tuple(check for module in _MODULES for check in module.ON_POD)


def create_refusal(body: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    """Why the API server refuses creating `body` in `cluster` now (None: it does not)."""
    for check in ON_CREATE:
        refused = check(body, cluster)
        if refused:
            return refused
    return None


def pod_refusal(workload: Workload, cluster: ClusterObjects) -> str | None:
    """Why the workload's pods are refused on creation or never become Ready (None: they run)."""
    for check in ON_POD:
        refused = check(workload, cluster)
        if refused:
            return refused
    return None
