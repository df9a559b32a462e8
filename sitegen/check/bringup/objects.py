"""What a cluster holds during its first install: every object applied so far, the CRDs and API
groups it serves, and the workloads (pod templates) its objects make.

Every object applied is remembered with the Application (or runbook step) that applied it, so that a
blocker can name who would have provided what is missing. `ClusterObjects` is the state and the index of
objects that each part of `Cluster` (cluster.py) receives and reads. Not modelled: the API server's
defaulting and validation; whether the API server accepts an object is admission.py's. An object
applied again replaces the one before; a controller's write of one field (`write_field`) changes the
live object only, never what an Application holds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from constructs.cluster_manager import resource_of
from sitegen.check.bringup.kube import BUILTIN, Node, PodTemplate, group_of, pod_template
from sitegen.check.bringup.references import external
from sitegen.check.rbac import Rbac
from sitegen.tree.fields import dig

if TYPE_CHECKING:
    from sitegen.check.bringup.vault import Vault

Key = tuple[str, str, str, str]  # group, kind, namespace, name
_UNSET = object()
RBAC_KINDS = ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return group_of(body), str(body.get("kind")), str(meta.get("namespace", "")), str(meta["name"])


class Keys:
    """`key_of` for bodies asked about again and again, kept by body (bodies never change in place)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Mapping[str, Any], Key]] = {}

    def of(self, body: Mapping[str, Any]) -> Key:
        known = self._known.get(id(body))
        if known is None or known[0] is not body:
            known = self._known[id(body)] = (body, key_of(body))
        return known[1]


def show(key: Key) -> str:
    _, kind, ns, name = key
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


@dataclass
class Applied:
    body: Mapping[str, Any]
    owner: str  # the Application, or "runbook step N"


@dataclass
class Workload:
    """A pod template's fate: where its pods run, or why they do not."""

    template: PodTemplate
    owner: str
    placed: dict[str, int] = field(default_factory=dict)  # node -> pods
    running: bool = False
    done: bool = False  # a Job that ran to completion
    reason: str = "not reconciled yet"
    admitted: bool | None = None  # None: not managed by Kueue
    priority: int = 0
    claim_classes: tuple[str | None, ...] = ()  # storage classes of its volume claim templates
    operator: tuple[str, str] | None = None  # (group, kind) of the custom resource an operator expands
    unadmitted: PodTemplate | None = None  # its template before Kueue injected its flavor's placement
    unplaced: bool = False  # admitted, but its pods are not all Ready (they do not fit, or are refused)
    stranded_on: str | None = None  # a deleted Node its node-local claim's volume stays on
    backoff: object = None  # requeued by waitForPodsReady: held back until the nodes or its refusal change


class ClusterObjects:
    """A cluster's state, and its objects by key, kind and name."""

    def __init__(self, name: str, vault: Vault) -> None:
        self.name = name
        self.vault = vault
        self.nodes: dict[str, Node] = {}
        self.objects: dict[Key, Applied] = {}  # apply() writes it, and its indexes
        self._kinds: dict[str, dict[Key, Applied]] = {}
        self._named: dict[tuple[str, str, str], Key] = {}  # kind, namespace, name -> key
        self._order: dict[Key, int] = {}
        self.crds: dict[tuple[str, str], tuple[str, str]] = {}  # (group, kind) -> (plural, owner)
        self.workloads: dict[Key, Workload] = {}
        self.assumed: set[str] = set()  # reviewed external objects it relied on (references.py)
        self.volume_groups: dict[
            str, set[str]
        ] = {}  # pool -> LVM volume groups the runbook made on its hosts
        self.applier = "kubernetes-admin"  # who applies dist/ here (state.py: Argo CD's account)
        self.remote = False  # managed by another cluster's Argo CD (a spoke)
        # PodSecurity admission: the API server's default enforced level and its exempt namespaces
        self.pod_security: tuple[str, frozenset[str]] = ("privileged", frozenset())
        self.manager: tuple[str, str] | None = None  # the account that Argo CD manages it as
        # the API server's --enable-admission-plugins (beside those on by default)
        self.admission_plugins: frozenset[str] = frozenset()
        self.api_audiences: frozenset[str] = frozenset()  # the audiences its tokens must carry for it
        # the API server's addresses (host, port) and the names its certificate holds (refusals/cilium.py)
        self.api_server: tuple[frozenset[tuple[str, int]], frozenset[str]] = (frozenset(), frozenset())
        # the configuration of each plugin in the API server's admission configuration file
        self.plugin_configs: Mapping[str, Mapping[str, Any]] = {}
        self.cni_app = ""
        self.runtime_groups: dict[str, str] = {}  # API group -> the app whose running operator registers it
        self.log: list[str] = []
        self.changes = 0  # bumped by every change of state: the simulation runs until it stops moving
        self._answers: dict[tuple[Any, ...], tuple[int, Any]] = {}  # `unchanged`: key -> (changes, answer)
        self._kind_changes: dict[str, int] = {}  # kind -> changes of its objects (applied, written, deleted)
        self._kind_answers: dict[tuple[Any, ...], tuple[tuple[int, ...], Any]] = {}  # `unchanged_kinds`
        # fields of live objects controllers wrote, in order: (object, JSON pointer, controller)
        self.written: list[tuple[Key, str, str]] = []

    # ---- objects ---------------------------------------------------------------------------------
    def serves(self, group: str, kind: str) -> bool:
        if (group, kind) in BUILTIN or (group, kind) in self.crds:
            return True
        return group in self.runtime_groups and self.app_running(self.runtime_groups[group])

    def provider_of_kind(self, group: str, kind: str) -> str | None:
        return self.crds.get((group, kind), ("", self.runtime_groups.get(group)))[1]

    def has_namespace(self, name: str) -> bool:
        return name in ("default", "kube-system", "kube-public", "kube-node-lease") or (
            ("", "Namespace", "", name) in self.objects
        )

    def resolves(self, kind: str, namespace: str, name: str) -> bool:
        """The object is in the cluster, or one every cluster has (a reviewed entry, noted)."""
        if self.find(kind, namespace, name) is not None:
            return True
        reason = external(kind, namespace, name)
        if reason is not None:
            self.assumed.add(f"{kind} {namespace + '/' if namespace else ''}{name}: {reason}")
        return reason is not None

    def find(self, kind: str, namespace: str, name: str) -> Applied | None:
        key = self._named.get((kind, namespace, name))
        return None if key is None else self.objects[key]

    def of_kind(self, *kinds: str) -> list[tuple[Key, Applied]]:
        """The objects of these kinds, in the order they were first applied."""
        found = [item for kind in kinds for item in self._kinds.get(kind, {}).items()]
        return sorted(found, key=lambda item: self._order[item[0]]) if len(kinds) > 1 else found

    def apply(self, body: Mapping[str, Any], owner: str) -> None:
        key = key_of(body)
        if key not in self.objects or self.objects[key].body is not body:
            self.object_changed(key)
        applied = Applied(body, owner)
        self._order.setdefault(key, len(self._order))
        self.objects[key] = self._kinds.setdefault(key[1], {})[key] = applied
        self._named.setdefault((key[1], key[2], key[3]), key)  # the first group applied under the name
        if key[1] == "CustomResourceDefinition":
            spec = body["spec"]
            self.crds[(spec["group"], spec["names"]["kind"])] = (spec["names"]["plural"], owner)
        template = pod_template(body)
        if key in self.workloads:  # adopted by another app (a renamed one): its pods run on
            self.workloads[key].owner = owner
        elif template is not None:
            claims = dig(body, "spec", "volumeClaimTemplates") or []
            self.workloads[key] = Workload(
                template,
                owner,
                claim_classes=tuple(dig(c, "spec", "storageClassName") for c in claims),
            )
        # the workloads an operator makes of a custom resource: Operators.applied (operators.py)

    def unchanged(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """`compute()`, asked again only once the cluster changed: for answers that read the cluster's
        objects alone and are asked every round (Kueue's configuration, a controller's vault login)."""
        hit = self._answers.get(key)
        if hit is not None and hit[0] == self.changes:
            return hit[1]
        answer = compute()
        self._answers[key] = (self.changes, answer)
        return answer

    def object_changed(self, key: Key) -> None:
        """An object was applied anew, written or deleted."""
        self.changes += 1
        self._kind_changes[key[1]] = self._kind_changes.get(key[1], 0) + 1

    def unchanged_kinds(
        self, kinds: tuple[str, ...], key: tuple[Any, ...], compute: Callable[[], Any]
    ) -> Any:
        """`compute()`, asked again only once an object of `kinds` changed: for answers that read those
        objects alone (not on every change of the cluster, which is hundreds of times per variant)."""
        version = tuple(self._kind_changes.get(kind, 0) for kind in kinds)
        hit = self._kind_answers.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        answer = compute()
        self._kind_answers[key] = (version, answer)
        return answer

    def rbac(self) -> Rbac:
        """The cluster's roles and bindings as the API server's authorizer reads them (check/rbac.py)."""
        return self.unchanged_kinds(  # type: ignore[no-any-return]
            RBAC_KINDS, ("rbac",), lambda: Rbac(a.body for _, a in self.of_kind(*RBAC_KINDS))
        )

    def write_field(self, key: Key, pointer: str, value: Any, by: str | None) -> bool:
        """A controller (`by`) writes a field of a live object (a CA it injects, a Job it unsuspends),
        or a person edits it (`by` None: drift, not a controller's write): the object in the cluster
        changes, what Git holds does not. True if the value changed."""
        applied = self.objects.get(key)
        if applied is None:
            return False
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in pointer.strip("/").split("/")]
        # copy on write along the pointer only: bodies are never changed in place, so the rest is shared
        body = dict(applied.body)
        node: Any = body
        for part in parents:
            if isinstance(node, list):
                node[int(part)] = child = copy.copy(node[int(part)])
            else:
                node[part] = child = copy.copy(node.get(part, {}))
            node = child
        current = node[int(last)] if isinstance(node, list) else node.get(last, _UNSET)
        if current == value:
            return False
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
        applied.body = body
        if by is not None:
            self.written.append((key, pointer, by))
        self.object_changed(key)
        return True

    def owner_apps(self, owner: str) -> list[Workload]:
        return [w for w in self.workloads.values() if w.owner == owner and w.template.kind != "CronJob"]

    def app_running(self, owner: str | None) -> bool:
        """The controllers an Application ships are up: every Deployment and StatefulSet of it runs (not
        those an operator makes of its custom resources: the operator may be among its controllers)."""
        if owner is None:
            return False
        found = [
            w
            for w in self.owner_apps(owner)
            if w.template.kind in ("Deployment", "StatefulSet") and not w.operator
        ]
        return bool(found) and all(w.running for w in found)

    def controller_running(self, group: str, kind: str) -> bool:
        """The operator of a custom resource runs: the app that shipped its CRD has its controllers up."""
        return self.app_running(self.provider_of_kind(group, kind))

    def resource_name(self, group: str, kind: str) -> str:
        if (group, kind) in BUILTIN:
            return BUILTIN[(group, kind)]
        return self.crds.get((group, kind), (resource_of(kind), None))[0]

    def namespace_labels(self, name: str) -> dict[str, str]:
        applied = self.find("Namespace", "", name)
        own = dict((dig(applied.body, "metadata", "labels") or {}) if applied else {})
        return {**own, "kubernetes.io/metadata.name": name}

    def objects_body(self, w: Workload) -> Mapping[str, Any]:
        t = w.template
        found = self.find(t.kind, t.namespace, t.name)
        return found.body if found else {}
