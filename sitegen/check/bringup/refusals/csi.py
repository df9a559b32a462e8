"""A claim whose access modes its CSI driver does not support never binds. The API server accepts it;
the driver's external-provisioner (csi-provisioner v6.2.0 for TopoLVM and PowerScale, MinIO's build of
v5.2.0 for DirectPV) maps each of the claim's access modes to a CSI mode (csi-lib-utils v0.23.2
accessmodes.ToCSIAccessMode: which mapping depends on whether the driver advertises the
SINGLE_NODE_MULTI_WRITER controller capability) and calls the driver's CreateVolume, which answers
InvalidArgument for a mode it does not take; the provisioner retries and records the event
`ProvisioningFailed: failed to provision volume with StorageClass "<class>": rpc error: code =
InvalidArgument desc = <the driver's message>`.

What each driver takes is declared with its component (`Component.csi_access`, from the driver's
source). Checked where a claim would be provisioned: a PersistentVolumeClaim once nothing else keeps it from binding (storage.py's
`claim_status`), and the claim templates of a StatefulSet's pods (`ON_POD`).

Not modelled: claim templates of operators' custom resources (CloudNativePG's, AIStor's pools, the
Prometheus Operator's), volumeMode Block (every declared driver takes it with the same modes), a claim
bound to a pre-made PersistentVolume (`volumeName`: no provisioning), drivers without a declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.components.base import CsiAccess
from sitegen.components.catalog import COMPONENTS
from sitegen.tree.fields import dig

# csi-lib-utils accessmodes: the Kubernetes mode -> the CSI mode, without / with SINGLE_NODE_MULTI_WRITER
_TO_CSI = {
    "ReadWriteOnce": ("SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER"),
    "ReadWriteOncePod": ("SINGLE_NODE_WRITER", "SINGLE_NODE_SINGLE_WRITER"),
    "ReadOnlyMany": ("MULTI_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"),
    "ReadWriteMany": ("MULTI_NODE_MULTI_WRITER", "MULTI_NODE_MULTI_WRITER"),
}


def refused(access: CsiAccess, access_modes: list[str]) -> str | None:
    """The driver's message for the first access mode its CreateVolume does not take, or None."""
    for mode in access_modes:
        pair = _TO_CSI.get(mode)
        if pair is None:  # not a Kubernetes access mode: the API server's validation refuses it
            continue
        csi_mode = pair[access.single_node_multi_writer]
        if csi_mode not in access.modes:
            return access.refusal.format(mode=csi_mode, volume="pvc-<uid>")
    return None


@cache
def declared() -> dict[str, CsiAccess]:
    """The drivers' declarations (Component.csi_access), by provisioner name."""
    return {kind.csi_access.driver: kind.csi_access for kind in COMPONENTS if kind.csi_access is not None}


def provisioning_refusal(claim_spec: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    """Why the provisioner of the claim's StorageClass fails to provision it (its event), or None."""
    if claim_spec.get("volumeName"):
        return None
    storage_class = claim_spec.get("storageClassName")
    sc = cluster.find("StorageClass", "", storage_class) if storage_class else None
    if sc is None:
        return None  # storage.py names the missing class
    access = declared().get(str(sc.body.get("provisioner", "")))
    why = refused(access, list(claim_spec.get("accessModes") or [])) if access else None
    if why is None:
        return None
    return (
        f'failed to provision volume with StorageClass "{storage_class}": rpc error: code = InvalidArgument '
        f"desc = {why} (accessModes {', '.join(claim_spec.get('accessModes') or [])})"
    )


def unsupported_claim_template(workload: Workload, cluster: ClusterObjects) -> str | None:
    """A StatefulSet's pods wait on claims from its templates that never bind."""
    t = workload.template
    if t.kind != "StatefulSet" or workload.operator is not None:
        return None
    for claim in dig(cluster.objects_body(workload), "spec", "volumeClaimTemplates") or []:
        why = provisioning_refusal(claim.get("spec") or {}, cluster)
        if why:
            name = dig(claim, "metadata", "name", default="")
            return f"volume claim {name}: {why}"
    return None


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (unsupported_claim_template,)
