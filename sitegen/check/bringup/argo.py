"""Argo CD's sync semantics, as far as a first install depends on them.

- A sync dry-runs every object first: a kind the cluster does not serve (unless its CRD is in the same
  sync, or the object skips dry-run), a namespace that does not exist (unless created by the sync) or a
  webhook that cannot answer fails the whole attempt before anything is applied.
- Objects are applied by sync wave, then kind order; before the next wave every object of the previous
  one must be Healthy. A failed attempt is retried from the start (retry limit of the app).
- An Application's health is the worst of its objects'. An object's health is Argo CD's, as the pinned
  version assesses it (health.py): a kind without a built-in check or an argocd-cm script is Healthy as
  soon as it exists. An `Application` has none of its own: only argocd-cm's script makes a root's
  waves wait on the Applications in them. An ApplicationSet's built-in check reads its conditions
  only; argocd-cm's (appset.py, the roots in convergence.py) reads the apps it generated.
- Automated sync (the site's every Application): a sync starts when the app's objects differ from Git
  (drift.py); self-heal syncs the objects that drifted; prune deletes what Git no longer has, but an
  object marked Prune=false, which keeps the app OutOfSync. With time passing (day 2), a failed
  attempt is retried after its backoff until the retry limit, then the app is Degraded.
- Hooks (gitops-engine pkg/sync/hook): Argo CD's annotation, else Helm's, gives an object its phases.
  PreSync hooks apply before the other objects, PostSync hooks once those are Healthy, each phase in
  its waves (Helm's hook weight is the wave where no sync-wave is set). A hook no sync runs (Argo CD's
  Skip, SyncFail, PostDelete; Helm's `post-delete`, `pre-delete`, `test`) is left out of the sync;
  the delete hooks run when the Application is deleted (appset.py), which is why synth ships none. Not modelled:
  a hook of two phases runs in its first only; hook deletion policies (a finished hook stays).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from constructs.argocd import tracked
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.drift import differences
from sitegen.check.bringup.health import (
    HealthChecks,
    LuaHealthError,
    builtin_script,
    customization_key,
    run_health_script,
)
from sitegen.check.bringup.kube import pod_template, sync_order, sync_phases
from sitegen.check.bringup.objects import Key, Keys, key_of, show
from sitegen.check.bringup.operators import CNPG_CLUSTER
from sitegen.check.bringup.refusals import create_refusal
from sitegen.check.project_policy import (
    application_destination_refusal,
    destination_refusal,
    kind_refusal,
    source_refusal,
)
from sitegen.compose.ownership import SYNC_OPTIONS, runs_on_delete
from sitegen.tree.fields import dig

HEALTHY = "Healthy"
SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"
APPLY_OUT_OF_SYNC_ONLY = "ApplyOutOfSyncOnly=true"
# The built-in checks of the pinned Argo CD the simulation models (the others: assumptions, printed)
MODELLED_CHECKS = {
    "PersistentVolumeClaim",
    "ExternalSecret",
    "SecretStore",
    "ClusterSecretStore",
    "Certificate",
    "APIService",
}


def _waves(objects: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Objects in sync order, grouped by phase and wave (kind order within), as gitops-engine applies
    them: a group starts once every object of the one before is Healthy."""
    groups: list[list[Mapping[str, Any]]] = []
    for body in sorted(objects, key=sync_order):
        if not groups or sync_order(groups[-1][0])[:2] != sync_order(body)[:2]:
            groups.append([])
        groups[-1].append(body)
    return groups


RBAC_GROUP = "rbac.authorization.k8s.io"


def _keeps(body: Mapping[str, Any]) -> bool:
    """The object says Prune=false: a sync leaves it when git no longer has it."""
    options = dig(body, "metadata", "annotations", SYNC_OPTIONS, default="")
    return "Prune=false" in [o.strip() for o in str(options).split(",")]


def synced_by_argo(body: Mapping[str, Any]) -> bool:
    """Argo CD applies the object in some phase of a sync (kube.sync_phases)."""
    return bool(sync_phases(body))


@dataclass(frozen=True)
class Failure:
    """A failed sync attempt: which object, why, and which Application would provide what is missing."""

    app: str
    obj: str
    reason: str
    provider: str | None  # None: nothing in the variant provides it

    def __str__(self) -> str:
        by = f" (provided by {self.provider})" if self.provider and self.provider != self.app else ""
        return f"{self.obj}: {self.reason}{by}"


@dataclass
class Providers:
    """Which Application of the variant ships each CRD and creates each namespace."""

    crds: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (cluster, group, kind) -> app
    namespaces: dict[tuple[str, str], str] = field(default_factory=dict)  # (cluster, namespace) -> app
    webhooks: dict[tuple[str, str], str] = field(default_factory=dict)  # (cluster, config name) -> app
    groups: dict[tuple[str, str], str] = field(default_factory=dict)  # (cluster, API group) -> app


class AppSync:
    """One Application: its objects, where it stands in its sync, and its health."""

    def __init__(
        self,
        name: str,
        cluster: Cluster,
        objects: list[Mapping[str, Any]],
        *,
        sync_options: list[str],
        destination_namespace: str,
        retry_limit: int,
        registered: Callable[[], str | None],
        providers: Providers,
    ) -> None:
        self.name = name
        self.cluster = cluster
        self.objects = sorted(filter(synced_by_argo, objects), key=sync_order)
        # hooks Argo CD runs when the Application is deleted (controller/hook.go), not in a sync
        self.hooks_on_delete = [b for b in objects if runs_on_delete(b)]
        self.sync_options = sync_options
        self.destination_namespace = destination_namespace
        self.retry_limit = retry_limit
        self.registered = registered
        self.providers = providers
        self.checks = HealthChecks({})  # the built-in ones until Argo CD's own config is known
        self.tasks = list(self.objects)  # what the current sync operation applies
        self.groups = _waves(self.tasks)
        self.wave = 0  # its sync wave among the root's objects
        self.generated_by = ""  # the ApplicationSet that generates it, if one does
        self.automated = True  # syncs by itself (automated sync)
        self.self_heal = True  # and again when the cluster drifts from Git
        self.prunes = True  # its syncs delete what git no longer has (automated prune)
        self.ignore_differences: list[Mapping[str, Any]] = []
        self.heals = 0  # self-heal syncs it started
        # time passes (day 2): a failed attempt is retried after its backoff, whatever else moved, until
        # the retry limit; on the first install a round is no time, and a retry waits for a change
        self.timed = False
        self.reachable: Callable[[], str | None] = lambda: None  # why its cluster cannot be reached
        self.policy: tuple[Mapping[str, Any] | None, str, str] | None = None  # (AppProject, server, repo)
        self.unpruned: list[Key] = []  # what git no longer has and its syncs did not delete
        self.created = False
        self.synced = False
        self.failed = False
        self.attempts = 0
        self.failures: list[Failure] = []
        self._group = 0
        self._dry_run_passed = False
        self._applied_group = -1
        self._changes_at_failure = -1
        # the last comparison per object: (Git's body, the live body, the ignores, differs). Bodies are
        # never changed in place (a write makes a new live body), so the same three compare the same.
        self._compared: dict[Key, tuple[object, object, object, bool]] = {}
        self._keys = Keys()  # drifted() asks for its objects' keys every round
        self.waiting = ""

    # ---- sync ----------------------------------------------------------------------------------
    def resync(
        self, objects: list[Mapping[str, Any]], *, only: set[Key] | None = None
    ) -> list[Mapping[str, Any]]:
        """A new sync operation, git having changed: gitops-engine's tasks are every object of the app,
        or with ApplyOutOfSyncOnly=true only those that differ from what the cluster holds
        (filterOutOfSyncTasks); it waits, wave by wave, on the health of the tasks it applied, never on
        an object it skipped. `only`: a self-heal, which syncs the objects that drifted and prunes
        nothing else. What git no longer has is pruned (automated prune) unless it says Prune=false:
        that stays, and keeps the app OutOfSync. Returns the tasks."""
        self.objects = sorted(filter(synced_by_argo, objects), key=sync_order)
        self.hooks_on_delete = [b for b in objects if runs_on_delete(b)]
        if only is None:
            wanted = {key_of(b) for b in self.objects}
            gone = sorted(
                k for k, a in self.cluster.objects.items() if a.owner == self.name and k not in wanted
            )
            self.unpruned = [k for k in gone if not self.prunes or _keeps(self.cluster.objects[k].body)]
            for key in gone:  # Argo CD prunes after the apply; the simulation at once (nothing waits on it)
                if key not in self.unpruned:
                    self.cluster.delete(key)
        tasks = [b for b in self.objects if only is None or key_of(b) in only]
        if APPLY_OUT_OF_SYNC_ONLY in self.sync_options:
            live = self.cluster.objects
            tasks = [b for b in tasks if key_of(b) not in live or live[key_of(b)].body != b]
        self.tasks = tasks
        self.groups = _waves(tasks)
        self.synced = not tasks
        self.failed = False
        self.attempts = 0
        self.failures = []
        self._group = 0
        self._dry_run_passed = False
        self._applied_group = -1
        self._changes_at_failure = -1
        self.waiting = ""
        return tasks

    def _own_crds(self) -> set[tuple[str, str]]:
        return {
            (b["spec"]["group"], b["spec"]["names"]["kind"])
            for b in self.objects
            if b.get("kind") == "CustomResourceDefinition"
        }

    def _own_namespaces(self) -> set[str]:
        found = {b["metadata"]["name"] for b in self.objects if b.get("kind") == "Namespace"}
        if "CreateNamespace=true" in self.sync_options:
            found.add(self.destination_namespace)
        return found

    def _skips_dry_run(self, body: Mapping[str, Any]) -> bool:
        options = dig(body, "metadata", "annotations", "argocd.argoproj.io/sync-options", default="")
        return SKIP_DRY_RUN in self.sync_options or SKIP_DRY_RUN in options

    def _project_refusal(self, body: Mapping[str, Any]) -> str | None:
        """What the app's AppProject refuses, as Argo CD checks each resource of a sync."""
        if self.policy is None:
            return None
        project, server, repo = self.policy
        if project is None:
            return "its project does not exist: Argo CD syncs nothing of it"
        group, kind, ns, name = key_of(body)
        return (
            source_refusal(project, repo)
            or application_destination_refusal(project, server, self.destination_namespace)
            or kind_refusal(project, group, kind, namespaced=bool(ns), name=name)
            or (destination_refusal(project, server, ns) if ns else None)
        )

    def _manager_refusal(self, manager: tuple[str, str], body: Mapping[str, Any]) -> str | None:
        """What a spoke's manager account may not do with the object: create its kind, or bind the role
        a binding names (the API server refuses a binding to a role its creator may not bind)."""
        group, kind, ns, _ = key_of(body)
        rbac, where = self.cluster.rbac(), ns or None
        ref = body.get("roleRef") or {}
        if kind in ("ClusterRoleBinding", "RoleBinding") and group == RBAC_GROUP and ref:
            roles = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            if not rbac.may(manager, "bind", RBAC_GROUP, roles, where, name=ref.get("name")):
                return f"bind {ref.get('kind')} {ref.get('name')} (the API server refuses the binding)"
        resource = self.cluster.resource_name(group, kind)
        if not rbac.may(manager, "create", group, resource, where):
            return f"create {resource}{'.' + group if group else ''}"
        return None

    def _check(self, body: Mapping[str, Any], *, dry_run: bool) -> Failure | None:
        group, kind, ns, _ = key_of(body)
        where = self.cluster.name
        refused = self._project_refusal(body)
        if refused:
            return Failure(self.name, show(key_of(body)), refused, None)
        if kind == "Node" and group == "":
            return Failure(
                self.name, show(key_of(body)),
                "a Node from Git: Argo CD creates it before the host joins, and the joining kubelet then "
                "skips its --register-with-taints (the pool's taints never arrive)",
                "the kubelet",
            )  # fmt: skip
        manager = self.cluster.manager
        if self.cluster.remote and manager is None:
            return Failure(
                self.name, show(key_of(body)),
                f"Argo CD has no credential for {where}: no service-account token was issued there", None,
            )  # fmt: skip
        if manager is not None:
            refused = self._manager_refusal(manager, body)
            if refused:
                what = f"Argo CD manages {where} as {manager[0]}/{manager[1]}, which may not {refused}"
                return Failure(self.name, show(key_of(body)), what, None)
        if not self.cluster.serves(group, kind):
            own = (group, kind) in self._own_crds()
            if not (dry_run and (own or self._skips_dry_run(body))):
                provider = self.providers.crds.get((where, group, kind)) or self.providers.groups.get(
                    (where, group)
                )
                return Failure(
                    self.name, show(key_of(body)), f"the cluster serves no {kind} ({group})", provider
                )
        if ns and not self.cluster.has_namespace(ns) and not (dry_run and ns in self._own_namespaces()):
            provider = self.providers.namespaces.get((where, ns))
            return Failure(self.name, show(key_of(body)), f"namespace {ns} does not exist", provider)
        refused = create_refusal(body, self.cluster)
        if refused:
            return Failure(self.name, show(key_of(body)), refused, None)
        blocked = self.cluster.admission.admission_blocker(tracked(dict(body), self.name))
        if blocked:
            config = blocked.split(" ", 2)[1]
            provider = self.providers.webhooks.get((where, config))
            return Failure(self.name, show(key_of(body)), blocked, provider)
        return None

    def _fail(self, failure: Failure) -> bool:
        self.attempts += 1
        self.failures.append(failure)
        self.waiting = str(failure)
        self._changes_at_failure = self.cluster.changes
        self._dry_run_passed = False
        self._group = 0
        self._applied_group = -1
        if self.attempts > self.retry_limit:
            self.failed = True
        return True

    def step(self) -> bool:
        """Advance the sync as far as the cluster allows, and heal drift once synced; True if anything
        moved."""
        healing = self.created and self.synced and not self.failed and self.automated and self.self_heal
        if healing and not self.unknown():
            drifted = self.drifted()
            if drifted:
                self.heals += 1
                self.resync(list(self.objects), only=set(drifted))
        if not self.created or self.synced or self.failed or not self.automated:
            return False
        unknown = self.unknown()
        if unknown:
            if self.waiting != unknown:
                self.waiting = unknown
                return True
            return False
        if (
            self.failures
            and not self.timed
            and self.cluster.changes == self._changes_at_failure
            and not self._dry_run_passed
        ):
            return False  # a retry now would fail the same way (no time passes on the first install)
        moved = False
        if not self._dry_run_passed:
            for body in self.tasks:
                failure = self._check(body, dry_run=True)
                if failure:
                    return self._fail(failure)
            self._dry_run_passed = True
            moved = True
        while self._group < len(self.groups):
            group = self.groups[self._group]
            if self._applied_group < self._group:
                if "CreateNamespace=true" in self.sync_options and not self.cluster.has_namespace(
                    self.destination_namespace
                ):
                    namespace = {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": self.destination_namespace},
                    }
                    self.cluster.apply(namespace, self.name)
                for body in group:
                    failure = self._check(body, dry_run=False)
                    if failure:
                        return self._fail(failure)
                    self.cluster.apply(body, self.name)
                self._applied_group = self._group
                moved = True
            if self._group == len(self.groups) - 1:
                break
            sick = self.first_unhealthy(group)
            if sick:
                if self.waiting != sick:
                    self.waiting = sick
                    moved = True
                return moved
            self._group += 1
        self.synced = True
        self.waiting = ""
        return True

    def unknown(self) -> str | None:
        """Why Argo CD cannot compare the app with its cluster: the cluster is not registered (no
        cluster Secret), or it cannot be reached. Its sync and health are then Unknown."""
        return self.registered() or self.reachable()

    def drifted(self) -> list[Key]:
        """Its objects the cluster no longer holds as Git has them (missing, or a field Git sets that
        differs and is not ignored: drift.py)."""
        found = []
        for body in self.objects:
            live = self.cluster.objects.get(key := self._keys.of(body))
            if live is None:
                found.append(key)
                continue
            seen = self._compared.get(key)
            if seen and seen[0] is body and seen[1] is live.body and seen[2] is self.ignore_differences:
                differs = seen[3]
            else:
                differs = bool(differences(body, live.body, self.ignore_differences))
                self._compared[key] = (body, live.body, self.ignore_differences, differs)
            if differs:
                found.append(key)
        return found

    def sync_status(self) -> str:
        """Synced once its sync completed and nothing differs or waits to be pruned."""
        if self.unknown():
            return "Unknown"
        return "Synced" if self.synced and not self.unpruned and not self.drifted() else "OutOfSync"

    # ---- health --------------------------------------------------------------------------------
    def first_unhealthy(self, bodies: list[Mapping[str, Any]] | None = None) -> str | None:
        for body in self.objects if bodies is None else bodies:
            status, why = self.object_health(body)
            if status != HEALTHY:
                return f"{show(key_of(body))} {status}: {why}"
        return None

    def object_health(self, body: Mapping[str, Any]) -> tuple[str, str]:
        """As the deployed Argo CD assesses it: the argocd-cm script for the kind if there is one, run on
        the object with the status its controller wrote; else the built-in check, modelled; else Healthy."""
        cluster = self.cluster
        key = key_of(body)
        if key not in cluster.objects:
            return "Missing", "not applied"
        group, kind = key[0], key[1]
        script, source = self.checks.script(group, kind), f"{customization_key(group, kind)} in argocd-cm"
        if script is None and self.checks.checked(group, kind):  # Argo CD's own Lua, where vendored
            script, source = builtin_script(group, kind), f"Argo CD's built-in {group}/{kind} check"
        if script is not None:
            try:
                status, message = run_health_script(script, {**body, "status": self.live_status(body)})
            except LuaHealthError as error:
                return "Unknown", f"{error} ({source})"
            why = cluster.operators.behind_status(body) if status != HEALTHY else None
            return status, f"{message} ({why})" if why else message
        if not self.checks.checked(group, kind):
            return HEALTHY, ""  # no health check in this Argo CD: Healthy as soon as it exists
        template = pod_template(body)
        if template is not None:
            w = cluster.workloads[key]
            if kind == "CronJob":
                return HEALTHY, ""
            if kind == "Job":
                if w.done:
                    return HEALTHY, ""
                return ("Suspended" if w.admitted is False else "Progressing"), w.reason
            return (HEALTHY, "") if w.running else ("Progressing", w.reason)
        spec = body.get("spec") or {}
        why: str | None = None
        if kind == "PersistentVolumeClaim":
            why = cluster.storage.claim_status(
                key[2], key[3], consumer=cluster.storage.claim_consumed(key[2], key[3])
            )
        elif kind == "ExternalSecret":
            why = cluster.secrets.external_secret_ready(body)
        elif kind in ("ClusterSecretStore", "SecretStore"):
            why = cluster.secrets.store_ready(kind, key[2], key[3])
        elif kind == "Certificate":
            why = cluster.secrets.certificate_blocker(body)
        elif kind == "Service" and spec.get("type") == "LoadBalancer":
            why = cluster.node_agents.load_balancer_blocker()
        elif kind == "APIService" and spec.get("service"):
            # kube-aggregator asks the Service for discovery itself (else FailedDiscoveryCheck)
            ref, admission = spec["service"], cluster.admission
            why = admission.service_ready(ref["namespace"], ref["name"], int(ref.get("port", 443)))
            why = why or admission.api_server_denied(ref)
        elif (group, kind) == CNPG_CLUSTER:
            # Argo CD's built-in check maps CloudNativePG's phase: healthy, a reconciliation stopped
            # (Suspended: an unknown plugin), failing over (Degraded), else Progressing
            phase = str(cluster.operators.controller_status(body).get("phase", ""))
            if phase == "Cluster in healthy state":
                return HEALTHY, ""
            status = (
                "Suspended"
                if phase.startswith("Cluster cannot proceed")
                else ("Degraded" if phase == "Failing over" else "Progressing")
            )
            return status, f"{phase or 'no status: the operator is not running'}" + (
                f" ({cluster.operators.behind_status(body)})" if cluster.operators.behind_status(body) else ""
            )
        elif kind not in MODELLED_CHECKS and kind != "Service":
            cluster.assumed.add(
                f"{group + '/' if group else ''}{kind}: Argo CD checks its health; not modelled, Healthy once applied"
            )
        return (HEALTHY, "") if why is None else ("Progressing", why)

    def live_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The object's status in the cluster: what its controller wrote (the root knows its children)."""
        return self.cluster.operators.controller_status(body)

    def health(self) -> tuple[str, str]:
        unknown = self.unknown()
        if unknown:
            return "Unknown", unknown
        if self.failed:
            return "Degraded", f"sync failed {self.attempts} times; last: {self.failures[-1]}"
        if not self.synced:
            return "Progressing", self.waiting or "syncing"
        sick = self.first_unhealthy()
        return ("Progressing", sick) if sick else (HEALTHY, "")
