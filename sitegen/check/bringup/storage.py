"""Volumes: a claim (a PersistentVolumeClaim, or a StatefulSet's claim template) binds once its
StorageClass exists, the CSI driver the class names is there and its controller runs, DirectPV has
drives (`kubectl directpv init`), and, for a WaitForFirstConsumer class, a pod uses the claim.

Not modelled: a default StorageClass (a claim without storageClassName never binds), the capacity of
drives and volumes, where a volume lives (day2.py keeps pods on node-local volumes on their node),
whether the driver's node plugin (a DaemonSet, in its own app where the chart's agents are released
apart) runs on the node of a pod that mounts the volume.
"""

from __future__ import annotations

from sitegen.check.bringup.kube import claim_refs
from sitegen.check.bringup.objects import ClusterObjects

DIRECTPV = "directpv-min-io"  # provisions only on drives handed to it with `kubectl directpv init`


class Storage(ClusterObjects):
    """Mixed into `Cluster` (cluster.py)."""

    # ---- volumes ---------------------------------------------------------------------------------
    def claim_blocker(self, storage_class: str | None, consumer: bool) -> str | None:
        if not storage_class:
            return "no storageClassName (no default StorageClass is assumed)"
        sc = self.find("StorageClass", "", storage_class)
        if sc is None:
            return f"StorageClass {storage_class} does not exist"
        provisioner = sc.body.get("provisioner", "")
        driver = self.find("CSIDriver", "", provisioner)
        if driver is None:
            return f"no CSIDriver {provisioner} (StorageClass {storage_class})"
        if not self.app_running(driver.owner):
            return f"the {provisioner} controller ({driver.owner}) is not running"
        if provisioner == DIRECTPV and not self.drives_initialized:
            return "DirectPV has no drives (`kubectl directpv init` has not run)"
        if sc.body.get("volumeBindingMode") == "WaitForFirstConsumer" and not consumer:
            return f"StorageClass {storage_class} binds on first consumer and none exists"
        return None

    def claim_consumed(self, namespace: str, name: str) -> bool:
        return any(
            w.template.namespace == namespace and name in claim_refs(w.template)
            for w in self.workloads.values()
        )

    def claim_status(self, namespace: str, name: str, consumer: bool = True) -> str | None:
        claim = self.find("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return f"PersistentVolumeClaim {namespace}/{name} does not exist"
        return self.claim_blocker(claim.body["spec"].get("storageClassName"), consumer)
