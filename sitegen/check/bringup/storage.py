"""Volumes: a claim (a PersistentVolumeClaim, or a StatefulSet's claim template) binds once its
StorageClass exists, the CSI driver the class names is there and its controller runs, DirectPV has
drives (`kubectl directpv init`), for a WaitForFirstConsumer class, a pod uses the claim, and the
driver supports its access modes (refusals/csi.py). The LVM volume groups the runbook's host steps
make (`vgcreate`, on the hosts of the pools a step's title names) are kept per pool; the node agents
that need them are judged in refusals/controllers.py.

Not modelled: a default StorageClass (a claim without storageClassName never binds), the capacity of
drives and volumes, where a volume lives (day2.py keeps pods on node-local volumes on their node),
whether the driver's node plugin (a DaemonSet, in its own app where the chart's agents are released
apart) runs on the node of a pod that mounts the volume, a volume group over the wrong disks or one
that a rebuilt host lost (a host keeps its pool's volume groups).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sitegen.check.bringup.kube import claim_refs
from sitegen.check.bringup.objects import ClusterObjects
from sitegen.check.bringup.refusals.csi import provisioning_refusal

DIRECTPV = "directpv-min-io"  # provisions only on drives handed to it with `kubectl directpv init`

# vgcreate's options that take a value (lvm2 man vgcreate, 2.03): the rest are flags or operands
VGCREATE_VALUED = frozenset({
    "-A", "--autobackup", "--addtag", "--alloc", "-c", "--clustered", "--dataalignment",
    "--dataalignmentoffset", "-l", "--maxlogicalvolumes", "--labelsector", "--locktype", "-M",
    "--metadatatype", "-p", "--maxphysicalvolumes", "--metadataprofile", "--metadatasize",
    "--pvmetadatacopies", "--metadatacopies", "-s", "--physicalextentsize", "--setautoactivation",
    "--systemid", "--vgmetadatacopies", "-Z", "--zero", "--commandprofile", "--config", "--devices",
    "--devicesfile", "--driverloaded", "--journal", "--lockopt", "--profile",
})  # fmt: skip


def _first_operand(args: list[str], valued: frozenset[str]) -> str | None:
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in valued  # `--opt value`; `--opt=value` carries its own
        else:
            return arg
    return None


def step_pools(title: str, pools: Iterable[str]) -> set[str]:
    """The pools a runbook step's host commands are for: those its title names ("... on the infra, gpu
    hosts"; the step's prose says "On every infra, gpu host")."""
    named = re.search(r"\bon the ([\w, -]+?) hosts?\b", title)
    return set(re.split(r",\s*|\s+and\s+", named.group(1))) & set(pools) if named else set()


class Storage:
    """Volume claims, their provisioners, and the drives and volume groups the runbook prepares."""

    def __init__(self, cluster: ClusterObjects) -> None:
        self.cluster = cluster
        self.drives_initialized = False  # the runbook ran DirectPV's drive init

    # ---- volumes ---------------------------------------------------------------------------------
    def claim_blocker(self, storage_class: str | None, consumer: bool) -> str | None:
        if not storage_class:
            return "no storageClassName (no default StorageClass is assumed)"
        sc = self.cluster.find("StorageClass", "", storage_class)
        if sc is None:
            return f"StorageClass {storage_class} does not exist"
        provisioner = sc.body.get("provisioner", "")
        driver = self.cluster.find("CSIDriver", "", provisioner)
        if driver is None:
            return f"no CSIDriver {provisioner} (StorageClass {storage_class})"
        if not self.cluster.app_running(driver.owner):
            return f"the {provisioner} controller ({driver.owner}) is not running"
        if provisioner == DIRECTPV and not self.drives_initialized:
            return "DirectPV has no drives (`kubectl directpv init` has not run)"
        if sc.body.get("volumeBindingMode") == "WaitForFirstConsumer" and not consumer:
            return f"StorageClass {storage_class} binds on first consumer and none exists"
        return None

    def claim_consumed(self, namespace: str, name: str) -> bool:
        return any(
            w.template.namespace == namespace and name in claim_refs(w.template)
            for w in self.cluster.workloads.values()
        )

    def claim_status(self, namespace: str, name: str, consumer: bool = True) -> str | None:
        claim = self.cluster.find("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return f"PersistentVolumeClaim {namespace}/{name} does not exist"
        spec = claim.body["spec"]
        return self.claim_blocker(spec.get("storageClassName"), consumer) or provisioning_refusal(
            spec, self.cluster
        )

    # ---- host volume groups ----------------------------------------------------------------------
    def vgcreate(self, args: list[str], pools: set[str]) -> None:
        """`vgcreate [options] <vg> <pv>...` run on the hosts of `pools`: they have the volume group."""
        name = _first_operand(args, VGCREATE_VALUED)
        if name is None or not pools:
            return
        for pool in pools:
            self.cluster.volume_groups.setdefault(pool, set()).add(name)
        self.cluster.changes += 1
