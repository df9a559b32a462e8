"""Power an account holds beyond its namespace: the primitives check/power.py finds in the rendered RBAC,
the review a component gives for the ones its software needs, and the patch that narrows a chart's
rule to the names the component uses.

A component reviews its accounts in `Component.powers`; validate (RBC-003) refuses a primitive no
review covers, and the RUNBOOK lists every reviewed one with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitegen.components.node_access import CHANGES_NODES
from sitegen.components.patches import JsonPatch, ObjectPatch

# Cluster-admin-equivalent: each turns into every other grant in a step or two.
READS_SECRETS = "reads every Secret"
MAKES_PRIVILEGED_PODS = "creates pods where Pod Security does not hold"
PATCHES_PRIVILEGED_PODS = "patches pods where Pod Security does not hold"
MINTS_TOKENS = "creates tokens for other namespaces' accounts"
APPROVES_CLIENT_CSRS = "approves API client certificates"
REWRITES_ADMISSION = "rewrites admission (policies or webhooks)"
GRANTS_ANY_ROLE = "binds, escalates or impersonates beyond its roles"
EQUIVALENT = (
    READS_SECRETS,
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    MINTS_TOKENS,
    APPROVES_CLIENT_CSRS,
    REWRITES_ADMISSION,
    GRANTS_ANY_ROLE,
)
# Leave the namespace without reaching every credential at once (CHANGES_NODES is also node_rbac's).
CREATES_VOLUMES = "creates PersistentVolumes"
RELABELS_NAMESPACES = "relabels Namespaces"
UPDATES_CRDS = "updates CustomResourceDefinitions"
ESCAPES = (CHANGES_NODES, CREATES_VOLUMES, RELABELS_NAMESPACES, UPDATES_CRDS)
PRIMITIVES = EQUIVALENT + ESCAPES

# What a full operator of the cluster's objects holds (Argo CD's deployer, Velero's restorer).
EVERYTHING = PRIMITIVES


@dataclass(frozen=True)
class Reviewed:
    """The primitives one account may hold, and why its component needs them."""

    primitives: tuple[str, ...]
    why: str

    def __post_init__(self) -> None:
        unknown = set(self.primitives) - set(PRIMITIVES)
        if unknown:
            raise ValueError(f"not a primitive of check/power.py: {sorted(unknown)}")


# What a role may do that the RBAC admission policies let through only for the roles reviewed by name
# (`Component.reviewed_roles`): `sitegen-secret-readers` for the first, `sitegen-granting-roles` for the
# other two.
AGGREGATES_ROLES = "gathers the rules of the roles carrying its labels"
ROLE_POWERS = (READS_SECRETS, GRANTS_ANY_ROLE, AGGREGATES_ROLES)


@dataclass(frozen=True)
class RoleReview:
    """One of a component's roles (ClusterRole, or Role) by name: what it does of ROLE_POWERS, and why
    its software needs it."""

    does: tuple[str, ...]
    why: str

    def __post_init__(self) -> None:
        unknown = set(self.does) - set(ROLE_POWERS)
        if unknown or not self.does:
            raise ValueError(f"a reviewed role does some of {ROLE_POWERS}, not {sorted(unknown)}")


def narrow_rule(
    cluster_role: str, index: int, rule: Mapping[str, Any], into: Sequence[Mapping[str, Any]], *, why: str
) -> ObjectPatch:
    """Replace rule `index` of a chart's ClusterRole, which must still read `rule` (a chart bump that
    changes it stops the synth), by the rules `into`: the verbs the component uses, on the names it uses."""
    path = f"/rules/{index}"
    ops = [JsonPatch("test", path, dict(rule)), JsonPatch("remove", path)]
    ops += [JsonPatch("add", f"/rules/{index + i}", dict(r)) for i, r in enumerate(into)]
    return ObjectPatch("ClusterRole", cluster_role, why, tuple(ops))


def persistent_only(driver: str, *, modes: Sequence[str] = ("Persistent", "Ephemeral")) -> ObjectPatch:
    """A chart's CSIDriver that also serves inline (ephemeral) volumes, narrowed to PersistentVolumes:
    an inline volume names the driver in the pod itself, so any namespace that may create pods would
    reach the backend with no claim, no StorageClass and no quota in the way. The field is immutable:
    a running cluster replaces the CSIDriver (delete, then sync), which mounted volumes survive."""
    path = "/spec/volumeLifecycleModes"
    return ObjectPatch(
        "CSIDriver",
        driver,
        "tenants get storage through claims only: no inline CSI volumes",
        (JsonPatch("test", path, list(modes)), JsonPatch("replace", path, ["Persistent"])),
    )
