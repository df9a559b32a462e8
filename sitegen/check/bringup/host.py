"""A host as a day-2 procedure rebuilds it, starting empty: what its baseline left (containerd's
configuration), the files the procedure placed, its rails; and which files the API server needs on a
control-plane host.

Not modelled: the host's packages and kernel beyond the baseline having run, its disks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constructs.kubeadm import KUBEADM_PKI
from sitegen.tree.fields import dig

KUBEADM_DIR = KUBEADM_PKI.rsplit("/", 1)[0]


@dataclass
class RebuiltHost:
    name: str
    pool: str
    address: str
    runtime: dict[str, Any] | None = None  # containerd's configuration its baseline wrote
    kernel: dict[str, str] = field(default_factory=dict)  # the sysctls its baseline wrote
    baseline: bool = False  # its preparation ran
    rails: set[str] = field(default_factory=set)  # the IPoIB interfaces its fabric preparation named
    fabric: bool = False
    files: set[str] = field(default_factory=set)  # host paths the procedure installed
    encryption_key: str | None = None  # where its encryption configuration's key came from


def api_server_files(setup: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(flag, path) of every file the API server's flags name that kubeadm does not write: the ones
    under kubeadm's folder but outside its PKI (the audit policy, the admission, authentication and
    encryption configurations)."""
    args = dig(setup, "apiServer", "extraArgs") or []
    return [
        (a["name"], str(a["value"]))
        for a in args
        if str(a.get("value", "")).startswith(f"{KUBEADM_DIR}/")
        and not str(a["value"]).startswith(f"{KUBEADM_PKI}/")
    ]
