"""The Pod Security Standards, as the API server's PodSecurity admission applies them to a pod spec.

`violations(level, spec)` lists what a pod of that spec breaks at `baseline` or `restricted`; a pod
that breaks the level its namespace enforces is rejected when its controller creates it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sitegen.tree.fields import dig

LEVELS = ("privileged", "baseline", "restricted")
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)


def containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _baseline(spec: dict[str, Any]) -> list[str]:
    out = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            out.append(f"{key}")
    pod_ctx = spec.get("securityContext") or {}
    if dig(pod_ctx, "seccompProfile", "type") == "Unconfined":
        out.append("seccomp Unconfined")
    if any(s.get("name") not in SAFE_SYSCTLS for s in pod_ctx.get("sysctls") or []):
        out.append("unsafe sysctls")
    if any("hostPath" in v for v in spec.get("volumes") or []):
        out.append("hostPath volumes")
    for c in containers(spec):
        ctx = c.get("securityContext") or {}
        name = c.get("name", "?")
        if ctx.get("privileged"):
            out.append(f"{name}: privileged")
        added = set(dig(ctx, "capabilities", "add") or []) - BASELINE_CAPABILITIES
        if added:
            out.append(f"{name}: adds {', '.join(sorted(added))}")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            out.append(f"{name}: hostPort")
        if ctx.get("procMount") not in (None, "Default"):
            out.append(f"{name}: procMount")
        if dig(ctx, "seccompProfile", "type") == "Unconfined":
            out.append(f"{name}: seccomp Unconfined")
        if dig(ctx, "windowsOptions", "hostProcess"):
            out.append(f"{name}: hostProcess")
    return out


def _restricted(spec: dict[str, Any]) -> list[str]:
    out = []
    pod_ctx = spec.get("securityContext") or {}
    kinds = {k for v in spec.get("volumes") or [] for k in v if k != "name"} - RESTRICTED_VOLUMES
    if kinds:
        out.append(f"volume types {', '.join(sorted(kinds))}")
    for c in containers(spec):
        ctx = c.get("securityContext") or {}
        name = c.get("name", "?")
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation must be false")
        if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
            out.append(f"{name}: runAsNonRoot must be true")
        if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccompProfile must be RuntimeDefault")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{name}: capabilities must drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{name}: adds capabilities beyond NET_BIND_SERVICE")
    return out


def violations(level: str, spec: dict[str, Any]) -> list[str]:
    if level == "privileged":
        return []
    out = _baseline(spec)
    return out + _restricted(spec) if level == "restricted" else out
