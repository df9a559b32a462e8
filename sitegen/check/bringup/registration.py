"""What a kubeadm configuration's nodeRegistration and the kubelet make of the hosts that join with it:
their node names and addresses, taints, labels, capacity, and what pods cannot request.

Not modelled: kubelet flags other than node-ip and node-labels, capacity beyond CPU, memory, pods and
GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.kube import Taint, quantity
from sitegen.model.hardware import Hardware
from sitegen.tree.fields import dig

CONTROL_PLANE_TAINT = Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule")
MAX_PODS = 110  # the kubelet's default
EVICTION_HARD_MEMORY = 100 * 2**20  # the kubelet's default memory.available threshold
KUBELET_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}  # set by every kubelet


def kubelet_args(registration: Mapping[str, Any]) -> dict[str, str]:
    return {a["name"]: a["value"] for a in registration.get("kubeletExtraArgs") or []}


def joining_addresses(registration: Mapping[str, Any], header: str) -> dict[str, str]:
    """The addresses of the hosts that join, by node name: a configuration shared by a pool's hosts
    (`${NODE_NAME}`) lists them as `name=address` in its header, any other names its one host."""
    if "${NODE_NAME}" in str(registration.get("name", "")):
        return dict(re.findall(r"\b([a-z][\w-]*)=(\d+\.\d+\.\d+\.\d+)", header))
    return {str(registration["name"]): str(kubelet_args(registration).get("node-ip", ""))}


def registered_taints(registration: Mapping[str, Any], *, control_plane: bool) -> list[Taint]:
    """The taints a node registers with: kubeadm's control-plane taint where the configuration lists
    none."""
    taints = registration.get("taints")
    if taints is None and control_plane:
        return [CONTROL_PLANE_TAINT]
    return [Taint(t["key"], str(t.get("value", "")), t["effect"]) for t in taints or []]


def registered_labels(registration: Mapping[str, Any], *, control_plane: bool) -> dict[str, str]:
    """The labels a node registers with (the kubelet's node-labels), and kubeadm's control-plane role."""
    extra = kubelet_args(registration)
    labels = {}
    if "node-labels" in extra:
        labels = dict(pair.split("=", 1) for pair in extra["node-labels"].split(","))
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
    return labels


def capacity(hardware: Hardware) -> dict[str, int]:
    """What the kubelet reports a host of this hardware holds."""
    return {
        "cpu": hardware.cpu_cores * 1000,
        "memory": hardware.memory_gb * 10**9,
        "pods": MAX_PODS,
        **({"hardware/gpu": hardware.gpu.count} if hardware.gpu else {}),
    }


def reservations(patch: Mapping[str, Any] | None) -> dict[str, int]:
    """What pods cannot request: kube and system reservations of the kubelet patch the node joined
    with, and the kubelet's default hard eviction threshold (memory.available 100Mi)."""
    reserved: dict[str, int] = {"memory": EVICTION_HARD_MEMORY}
    if patch is None:
        return reserved
    for field_name in ("systemReserved", "kubeReserved"):
        for name, value in (patch.get(field_name) or {}).items():
            reserved[name] = reserved.get(name, 0) + quantity(value, milli=name == "cpu")
    eviction = dig(patch, "evictionHard", "memory.available")
    if eviction:
        reserved["memory"] = reserved.get("memory", 0) + quantity(eviction)
    return reserved
