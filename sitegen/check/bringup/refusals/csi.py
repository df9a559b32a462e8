"""A claim whose access modes its CSI driver does not support never binds. The API server accepts it;
the driver's external-provisioner (csi-provisioner v6.2.0 for TopoLVM and PowerScale, MinIO's build of
v5.2.0 for DirectPV) maps each of the claim's access modes to a CSI mode (csi-lib-utils v0.23.2
accessmodes.ToCSIAccessMode: which mapping depends on whether the driver advertises the
SINGLE_NODE_MULTI_WRITER controller capability) and calls the driver's CreateVolume, which answers
InvalidArgument for a mode it does not take; the provisioner retries and records the event
`ProvisioningFailed: failed to provision volume with StorageClass "<class>": rpc error: code =
InvalidArgument desc = <the driver's message>`.

What each driver takes is declared with its component (sitegen/components/storage: topolvm.py,
aistor_volumemanager.py, csi_isilon.py: `CSI_ACCESS`, from the driver's source). Checked where a claim
would be provisioned: a PersistentVolumeClaim once nothing else keeps it from binding (storage.py's
`claim_status`), and the claim templates of a StatefulSet's pods (`ON_POD`).

Not modelled: claim templates of operators' custom resources (CloudNativePG's, AIStor's pools, the
Prometheus Operator's), volumeMode Block (every declared driver takes it with the same modes), a claim
bound to a pre-made PersistentVolume (`volumeName`: no provisioning), drivers without a declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.components.storage import aistor_volumemanager, csi_isilon, topolvm

# csi-lib-utils accessmodes: the Kubernetes mode -> the CSI mode, without / with SINGLE_NODE_MULTI_WRITER
_TO_CSI = {
    "ReadWriteOnce": ("SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER"),
    "ReadWriteOncePod": ("SINGLE_NODE_WRITER", "SINGLE_NODE_SINGLE_WRITER"),
    "ReadOnlyMany": ("MULTI_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"),
    "ReadWriteMany": ("MULTI_NODE_MULTI_WRITER", "MULTI_NODE_MULTI_WRITER"),
}


@dataclass(frozen=True)
class DriverAccess:
    """The CSI modes a driver's CreateVolume takes, and its message for the others."""

    driver: str
    single_node_multi_writer: bool
    modes: frozenset[str]
    refusal: str  # format: {mode} the CSI mode, {volume} the volume's name

    def refused(self, access_modes: list[str]) -> str | None:
        for mode in access_modes:
            pair = _TO_CSI.get(mode)
            if pair is None:  # not a Kubernetes access mode: the API server's validation refuses it
                continue
            csi_mode = pair[self.single_node_multi_writer]
            if csi_mode not in self.modes:
                return self.refusal.format(mode=csi_mode, volume="pvc-<uid>")
        return None


@cache
def declared() -> dict[str, DriverAccess]:
    """The drivers' declarations, by provisioner name."""
    found = {}
    for module in (topolvm, aistor_volumemanager, csi_isilon):
        d: Mapping[str, Any] = module.CSI_ACCESS
        found[d["driver"]] = DriverAccess(
            d["driver"], bool(d["single_node_multi_writer"]), frozenset(d["modes"]), d["refusal"]
        )
    return found


def provisioning_refusal(claim_spec: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    """Why the provisioner of the claim's StorageClass fails to provision it (its event), or None."""
    if claim_spec.get("volumeName"):
        return None
    storage_class = claim_spec.get("storageClassName")
    sc = cluster.find("StorageClass", "", storage_class) if storage_class else None
    if sc is None:
        return None  # storage.py names the missing class
    access = declared().get(str(sc.body.get("provisioner", "")))
    why = access.refused(list(claim_spec.get("accessModes") or [])) if access else None
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
    for claim in (cluster.objects_body(workload).get("spec") or {}).get("volumeClaimTemplates") or []:
        why = provisioning_refusal(claim.get("spec") or {}, cluster)
        if why:
            name = (claim.get("metadata") or {}).get("name", "")
            return f"volume claim {name}: {why}"
    return None


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (unsupported_claim_template,)
