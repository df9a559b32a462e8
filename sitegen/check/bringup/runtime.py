"""What the host preparation leaves for a host's kubelet: the container runtime it talks to, and the
kernel settings it checks.

Docker's `containerd.io` package ships `/etc/containerd/config.toml` with `disabled_plugins = ["cri"]`
(docker/containerd-packaging common/containerd.toml): a host whose preparation writes no configuration
of its own answers no CRI call, and kubeadm's preflight stops on "container runtime is not running".
A configuration that enables it must also run runc on the kubelet's cgroup driver (one cgroup manager
on a systemd host: containerd docs/cri/config.md, kubeadm's "Configuring a cgroup driver") and pin a
sandbox image (pulled through the mirrors like every image, so an air-gapped host is not left with the
runtime's built-in default).

A kubelet with protectKernelDefaults does not set the kernel settings it needs (KUBELET_KERNEL_TUNABLES):
it refuses to start unless the host has them already (kubelet v1.35 setupKernelTunables, "error"
behaviour). A setting the preparation does not write counts as missing: an OS image's defaults differ
(Ubuntu's vm.overcommit_memory and kernel.panic are 0).

Read from the host preparation script itself (the files it writes; a sysctl.d file is applied by the
script's `sysctl --system` and at every boot); not modelled: drop-ins of /etc/containerd/conf.d (the GPU
Operator's toolkit adds a runtime there, never the CRI's settings), settings other tools write.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from sitegen.model.hosts import KUBELET_KERNEL_TUNABLES
from sitegen.tree.fields import dig

CONFIG = "/etc/containerd/config.toml"
CRI = ("cri", "io.containerd.grpc.v1.cri")
_WRITE = re.compile(rf"^cat > {re.escape(CONFIG)} <<'(\w+)'\n(.*?)^\1$", re.M | re.S)
_SYSCTL_FILE = re.compile(r"^cat > /etc/sysctl\.d/[\w.-]+\.conf <<'(\w+)'\n(.*?)^\1$", re.M | re.S)


def written_config(script: str) -> dict[str, Any] | None:
    """The containerd configuration a host script writes, or None when it writes none."""
    found = _WRITE.search(script)
    return tomllib.loads(found.group(2)) if found else None


def refusal(config: dict[str, Any] | None, cgroup_driver: str) -> str | None:
    """Why a kubelet with `cgroup_driver` cannot run on containerd configured so (None: it can)."""
    if config is None:
        return (
            "containerd runs its package's configuration, which disables the CRI (disabled_plugins = "
            "[\"cri\"], Docker's containerd.io): kubeadm's preflight finds no container runtime"
        )
    if set(CRI) & set(config.get("disabled_plugins") or []):
        return "containerd's configuration disables the CRI: kubeadm's preflight finds no container runtime"
    plugins = config.get("plugins") or {}
    runc = (
        dig(plugins, "io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc", "options") or {}
    )  # fmt: skip
    systemd = bool(runc.get("SystemdCgroup"))
    if systemd != (cgroup_driver == "systemd"):
        runtime = "systemd" if systemd else "cgroupfs"
        return (
            f"runc runs on the {runtime} cgroup driver and the kubelet on {cgroup_driver}: two cgroup "
            "managers on one host (set SystemdCgroup as the kubelet's cgroupDriver)"
        )
    sandbox = dig(plugins, "io.containerd.cri.v1.images", "pinned_images", "sandbox")
    if not sandbox or "/pause:" not in str(sandbox):
        return "no sandbox image pinned: every pod's pause image is the runtime's built-in default, not kubeadm's"
    return None


def written_kernel_settings(script: str) -> dict[str, str]:
    """The sysctls a host script writes into /etc/sysctl.d (sysctl.d(5): `key = value`, `#` and `;`
    comments)."""
    settings = {}
    for found in _SYSCTL_FILE.finditer(script):
        for line in found.group(2).splitlines():
            key, equals, value = line.partition("=")
            if equals and not line.lstrip().startswith(("#", ";")):
                settings[key.strip()] = value.strip()
    return settings


def kernel_refusal(settings: dict[str, str], kubelet: dict[str, Any]) -> str | None:
    """Why a kubelet configured so does not start on a host with these kernel settings (None: it does)."""
    if not kubelet.get("protectKernelDefaults"):
        return None  # it sets them itself ("modify")
    off = [f"{key}={value}" for key, value in KUBELET_KERNEL_TUNABLES.items() if settings.get(key) != value]
    if not off:
        return None
    return (
        f"the kubelet does not start (protectKernelDefaults): the host baseline does not set {', '.join(off)}, "
        "and the kubelet checks them instead of setting them"
    )
