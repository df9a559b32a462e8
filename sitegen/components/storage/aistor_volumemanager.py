"""`aistor-volumemanager`: AIStor's CSI driver, one volume per NVMe drive of the storage pool."""

from __future__ import annotations

import re
from collections.abc import Mapping

from sitegen.components.base import (
    ChartComponent,
    CsiAccess,
    JsonPatch,
    Layer,
    NamespaceSecurity,
    ObjectPatch,
    placement_patch,
)
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    CREATES_VOLUMES,
    READS_SECRETS,
    UPDATES_CRDS,
    Reviewed,
    RoleReview,
    persistent_only,
)
from sitegen.components.storage import PROJECT
from sitegen.components.values import Placed, Values, placed

# The chart runs its controller and its node server under one account, whose ClusterRole reads every
# Secret and creates PersistentVolumes and CRDs: root on a storage node would hold all of it. The node
# server gets an account of its own, its ClusterRole the chart's reads but Secrets, and writes only to
# DirectPV's own resources and events (DirectPV's node server and node controller write nothing else:
# minio/directpv pkg/csi/node, pkg/drive, pkg/initrequest; the license comes as a mounted Secret).
CHART_ACCOUNT = "directpv-min-io"
DRIVER = "directpv-min-io"
NODE_ACCOUNT = "directpv-node-server"
NODE_SERVER = "node-server"
_READ = ["get", "list", "watch"]
NODE_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "persistentvolumes", "pods"],
     "verbs": _READ},
    {"apiGroups": ["storage.k8s.io"], "resources": ["csinodes", "storageclasses", "volumeattachments"],
     "verbs": _READ},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list", "patch", "update", "watch"]},
    {"apiGroups": ["directpv.min.io"],
     "resources": ["directpvdrives", "directpvinitrequests", "directpvnodes", "directpvvolumes"],
     "verbs": ["create", "delete", "get", "list", "update", "watch"]},
]  # fmt: skip


class Controller(Values):
    replicas: int


class VolumeManagerValues(Values):
    controller: Controller
    nodeserver: Placed


class AIStorVolumeManager(ChartComponent):
    name = "aistor-volumemanager"
    chart = "aistor-volumemanager"
    serves = ("directpv.min.io/v1beta1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    # The access modes DirectPV's CreateVolume accepts (the bring-up's refusals/csi.py reads them): the
    # open-source line of AIStor DirectPV 5.0.2, minio/directpv v4.1.6 pkg/csi/controller/server.go, takes
    # SINGLE_NODE_WRITER only and advertises no SINGLE_NODE_MULTI_WRITER (ReadWriteOnce and ReadWriteOncePod
    # map to SINGLE_NODE_WRITER; ReadOnlyMany and ReadWriteMany are refused); AIStor's source is not public.
    csi_access = CsiAccess(
        DRIVER,
        single_node_multi_writer=False,
        modes=frozenset(("SINGLE_NODE_WRITER",)),
        refusal="unsupported access mode {mode} for volume {volume}",
    )
    after = (Cilium, Namespaces)
    namespace = "directpv"  # the chart's, whatever the release namespace
    security = NamespaceSecurity("privileged", "the CSI node server formats and mounts the AIStor drives")

    @staticmethod
    def directpv_nodes(names: list[str]) -> str:
        """Host names in DirectPV's ellipsis notation (`st{01...30}`) where they are one numbered run,
        else listed (the plugin's --nodes takes either)."""
        parts = [re.fullmatch(r"(.*?)(\d+)", n) for n in names]
        if names and all(parts):
            prefixes = {m.group(1) for m in parts}
            widths = {len(m.group(2)) for m in parts}
            numbers = [int(m.group(2)) for m in parts]
            if (
                len(prefixes) == 1
                and len(widths) == 1
                and numbers == list(range(numbers[0], numbers[0] + len(names)))
            ):
                (prefix,), (width,) = prefixes, widths
                if len(names) > 1:
                    return f"{prefix}{{{numbers[0]:0{width}d}...{numbers[-1]:0{width}d}}}"
        return ",".join(names)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            ObjectPatch(
                "Namespace",
                self.namespace,
                "the namespaces app creates it, with its Pod Security level",
                drop=True,
            ),
            placement_patch(
                "Deployment",
                "controller",
                ctx.system_placement,
                why="the chart has no placement values for it",
            ),
            *self._node_account(),
            persistent_only(DRIVER),
        ]

    def _node_account(self) -> list[ObjectPatch]:
        why = "the node server's own account, not the controller's (see NODE_RULES)"
        subject = {"kind": "ServiceAccount", "name": NODE_ACCOUNT, "namespace": self.namespace}
        return [
            ObjectPatch("ServiceAccount", CHART_ACCOUNT, why, copy_as=NODE_ACCOUNT),
            ObjectPatch("ClusterRole", CHART_ACCOUNT, why, (JsonPatch("replace", "/rules", NODE_RULES),),
                        copy_as=NODE_ACCOUNT),
            ObjectPatch(
                "ClusterRoleBinding", CHART_ACCOUNT, why,
                (
                    JsonPatch("test", "/roleRef/name", CHART_ACCOUNT),
                    JsonPatch("replace", "/roleRef/name", NODE_ACCOUNT),
                    JsonPatch("replace", "/subjects", [subject]),
                ),
                copy_as=NODE_ACCOUNT,
            ),
            ObjectPatch(
                "DaemonSet", NODE_SERVER, why,
                (
                    JsonPatch("test", "/spec/template/spec/serviceAccountName", CHART_ACCOUNT),
                    JsonPatch("replace", "/spec/template/spec/serviceAccountName", NODE_ACCOUNT),
                ),
            ),
        ]  # fmt: skip

    def values(self, ctx: ClusterContext) -> VolumeManagerValues:
        storage = ctx.cluster.pool(ctx.site.storage.aistor.pool)
        return VolumeManagerValues(
            controller=Controller(replicas=3),
            # the node server manages the drives, so it runs exactly where AIStor runs
            nodeserver=Placed(**placed(storage.placement)),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "directpv-min-io": RoleReview(
                (READS_SECRETS,),
                "DirectPV's CSI controller: the chart's role reads Secrets a volume request names",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/directpv-min-io": Reviewed(
                (READS_SECRETS, CREATES_VOLUMES, UPDATES_CRDS),
                "DirectPV's CSI controller creates the drives' PersistentVolumes and upgrades its own CRDs; it reads the Secrets a volume request names; it runs on system nodes only (the node server has its own account)",
            ),
        }
