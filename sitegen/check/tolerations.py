"""How the API server compares tolerations (Kubernetes v1.35 pkg/util/tolerations/tolerations.go):
`is_superset` (one toleration tolerates at least what another does), `merge` (two lists, a toleration
another covers dropped) and `whitelist_admits` (PodTolerationRestriction's VerifyAgainstWhitelist; what
the plugin merges into a pod itself is bringup/kube.py's `added_by_the_plugin`). The static rule
PLC-008 and the bring-up's admission plugins (bringup/refusals/admission_plugins.py) share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Toleration = Mapping[str, Any]
_FIELDS = (("key", ""), ("operator", ""), ("value", ""), ("effect", ""), ("tolerationSeconds", None))


def _fields(t: Toleration) -> tuple[Any, ...]:
    """Its fields as the API's Go struct holds them (an omitted operator stays empty: no defaulting)."""
    return tuple(default if t.get(name) is None else t[name] for name, default in _FIELDS)


def is_superset(ss: Toleration, t: Toleration) -> bool:
    """`ss` tolerates every taint `t` does (isSuperset)."""
    if _fields(ss) == _fields(t):
        return True
    ss_key, ss_op, ss_value, ss_effect, ss_seconds = _fields(ss)
    t_key, t_op, t_value, t_effect, t_seconds = _fields(t)
    if t_key != ss_key and (ss_key != "" or ss_op != "Exists"):  # an empty key with Exists: every key
        return False
    if t_effect != ss_effect and ss_effect != "":  # an empty effect: every effect
        return False
    # a NoExecute toleration with seconds covers only as long a stay
    if (
        ss_effect == "NoExecute"
        and ss_seconds is not None
        and (t_seconds is None or int(t_seconds) > int(ss_seconds))
    ):
        return False
    if ss_op in ("Equal", ""):
        return t_op == "Equal" and str(t_value) == str(ss_value)
    return ss_op == "Exists"


def merge(first: Iterable[Toleration], second: Iterable[Toleration]) -> list[Toleration]:
    """MergeTolerations: both lists, without a toleration another one (a different one, or an earlier
    equal one) covers."""
    every = [*first, *second]
    merged: list[Toleration] = []
    for i, t in enumerate(every):
        if any(is_superset(kept, t) for kept in merged):
            continue
        if any(_fields(t) != _fields(later) and is_superset(later, t) for later in every[i + 1 :]):
            continue
        merged.append(t)
    return merged


def whitelist_admits(whitelist: Iterable[Toleration], toleration: Toleration) -> bool:
    """VerifyAgainstWhitelist for one toleration: some whitelist entry is a superset of it."""
    return any(is_superset(allowed, toleration) for allowed in whitelist)
