"""What keeps a running pod from ever becoming Ready, as the kubelet decides it from the pod's spec
(Kubernetes v1.35: pkg/kubelet/prober, pkg/probe/util.go, pkg/kubelet/status/generate.go).

- A probe's port given as a name (httpGet, tcpSocket) resolves against that container's own
  `ports[].name` only (`probe.ResolveContainerPort`: `findPortByName`, then `strconv.Atoi` as a last
  try). A name none of its ports has errors on every run (`Readiness probe errored and resulted in
  unknown state: strconv.Atoi: parsing "x": invalid syntax`) and the worker throws the result away
  (worker.go `doProbe`), so the probe keeps the result it starts with (`newWorker`): readiness
  Failure, so the pod is never Ready; startup Unknown, so the container never counts as started, its
  readiness is never probed and the pod is never Ready (a sidecar's also holds the containers after
  it); liveness Success, so the container runs on, unchecked: harmless to a bring-up, not refused.
  A number (or digits) is probed as is. gRPC probes take a number only (API validation).
- `readinessGates`: Ready needs each gate's pod condition True (`GeneratePodReadyCondition`:
  `corresponding condition of pod readiness gate "x" does not exist.`). Such conditions are written
  by a controller outside the kubelet (a cloud load balancer's, a rollout tool's); none runs in this
  model, so every gate keeps the pod unready.

Judged for Deployments, StatefulSets and DaemonSets (and what operators make of them), whose
controllers and Argo CD wait for Ready pods; a Job completes when its containers exit, whatever their
readiness. Not modelled: exec probes, whether the application answers on a resolved port, probe
timing and thresholds (a probe that resolves is taken to pass), and the node resources a pod that
never becomes Ready still holds (the simulation does not place it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck

_SERVING = ("Deployment", "StatefulSet", "DaemonSet")
# The probes whose lasting error keeps a pod unready, and what that does (liveness: none, see above)
_UNREADY_PROBES = {
    "readinessProbe": ("Readiness", "the pod never becomes Ready"),
    "startupProbe": ("Startup", "the container never counts as started and the pod never becomes Ready"),
}


def running_containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The containers that run beside each other: the pod's and its sidecars (init containers with
    restartPolicy Always). Only they are probed (validation forbids probes on the other init
    containers) and only their ports back a Service (wiring.py)."""
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*sidecars, *(spec.get("containers") or [])]


def unresolved_probe_port(container: Mapping[str, Any], probe: Mapping[str, Any]) -> str | None:
    """The probe's port name the kubelet cannot resolve on this container, or None."""
    action = probe.get("httpGet") or probe.get("tcpSocket") or {}
    port = action.get("port")
    if port is None or isinstance(port, int) or str(port).isdigit():
        return None
    names = {p.get("name") for p in container.get("ports") or []}
    return None if port in names else str(port)


def probe_refusal(spec: Mapping[str, Any]) -> str | None:
    """Why a probe with a port name its container lacks keeps the pod unready, or None."""
    for container in running_containers(spec):
        for field, (kind, effect) in _UNREADY_PROBES.items():
            probe = container.get(field)
            name = unresolved_probe_port(container, probe) if probe else None
            if name is not None:
                return (
                    f"container {container.get('name')}: {kind} probe errored and resulted in unknown state: "
                    f'strconv.Atoi: parsing "{name}": invalid syntax (no port of the container is named '
                    f'"{name}"): {effect}'
                )
    return None


def gate_refusal(spec: Mapping[str, Any]) -> str | None:
    """The kubelet's ReadinessGatesNotReady message for gates whose condition nothing sets, or None."""
    gates = [str(g.get("conditionType")) for g in spec.get("readinessGates") or []]
    if not gates:
        return None
    unset = ", ".join(f'corresponding condition of pod readiness gate "{g}" does not exist.' for g in gates)
    return f"ReadinessGatesNotReady: {unset} (no controller here sets it): the pod never becomes Ready"


def never_ready(workload: Workload, cluster: ClusterObjects) -> str | None:
    t = workload.template
    if t.kind not in _SERVING:
        return None
    return probe_refusal(t.spec) or gate_refusal(t.spec)


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (never_ready,)
