"""The ApplicationSet controller of the deployed Argo CD (v3.4.7), for one ApplicationSet of dist/ once a
root has applied it (what it generates: check/appsets.py).

- Each reconcile generates the elements and validates each Application: its project must exist and
  its destination must be a cluster Argo CD knows (a registered cluster Secret). An invalid one is
  neither created nor updated, and not deleted either (deleteInCluster works on every generated
  app, valid or not); the set reports `ErrorOccurred` naming it. The valid ones are created.
- `status.resources` lists every Application the set owns with its sync and health status, as
  `updateResourcesStatus` writes it on every reconcile (and, with progressive syncs on, whenever an
  app's status changes): what argocd-cm's health check for ApplicationSets reads.
- An element removed, or the set deleted: the Application is deleted. Argo CD then runs the app's
  PreDelete hooks (Argo CD's, and Helm's `pre-delete`), deletes every object it synced when the
  Application carries the resources finalizer (the set adds it unless it preserves resources on
  deletion), except those marked `Delete=false`, then runs its PostDelete hooks (controller/hook.go,
  appcontroller.go finalizeApplicationDeletion).

Not modelled: the controller's requeue timing (a round of the simulation is a reconcile), generation
policies other than the default (`sync`), templated `project` resolution for repository credentials.
Source: argo-cd v3.4.7 applicationset/controllers/applicationset_controller.go (Reconcile,
validateGeneratedApplications, deleteInCluster, updateResourcesStatus), applicationset/status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sitegen.check.appsets import ExpandedApp
from sitegen.check.bringup.argo import HEALTHY, AppSync
from sitegen.check.bringup.objects import Key, key_of, show
from sitegen.compose.ownership import SYNC_OPTIONS, runs_on_delete
from sitegen.tree.fields import dig

RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"


def builtin_health(status: Mapping[str, Any]) -> tuple[str, str]:
    """Argo CD's built-in ApplicationSet check (resource_customizations/argoproj.io/ApplicationSet):
    its conditions only, so Healthy as soon as its Applications are generated."""
    conditions = status.get("conditions") or []
    for kind, value, result in (
        ("ErrorOccurred", "True", "Degraded"),
        ("ResourcesUpToDate", "False", "Degraded"),
        ("RolloutProgressing", "True", "Progressing"),
        ("ResourcesUpToDate", "True", HEALTHY),
    ):
        for c in conditions:
            if c.get("type") == kind and c.get("status") == value:
                return result, str(c.get("message", ""))
    return "Progressing", "Waiting for the status to be reported"


@dataclass
class Deletion:
    """What deleting an Application did: the hooks it ran, what it deleted, what it left."""

    hooks: list[str] = field(default_factory=list)
    deleted: list[Key] = field(default_factory=list)
    kept: list[Key] = field(default_factory=list)  # Delete=false
    orphaned: list[Key] = field(default_factory=list)  # no resources finalizer: left, unmanaged


def delete_application(sync: AppSync, *, finalizer: bool) -> Deletion:
    """An Application deleted, as Argo CD finalizes it (see the module text)."""
    done = Deletion()
    cluster = sync.cluster
    hooks = [b for b in sync.hooks_on_delete]
    for body in hooks:  # a delete hook is a Job (or whatever it is) created and run in the cluster
        done.hooks.append(f"{show(key_of(body))} ({', '.join(runs_on_delete(body))})")
    owned = sorted(k for k, a in cluster.objects.items() if a.owner == sync.name)
    for key in owned:
        options = str(dig(cluster.objects[key].body, "metadata", "annotations", SYNC_OPTIONS, default=""))
        if not finalizer:
            done.orphaned.append(key)
        elif "Delete=false" in [o.strip() for o in options.split(",")]:
            done.kept.append(key)
        else:
            done.deleted += [k for k in cluster.delete(key) if k not in done.deleted]
    return done


class AppSetController:
    """One ApplicationSet in the cluster: the Applications it generates and the status it writes."""

    def __init__(
        self,
        name: str,
        spec: Mapping[str, Any],
        generated: list[tuple[ExpandedApp, AppSync]],
        *,
        refusal: Callable[[ExpandedApp], str | None],
    ) -> None:
        self.name = name
        self.spec = spec
        self.refusal = refusal  # why the controller would not create the app now (validation)
        self.apps: dict[str, AppSync] = {}
        self.finalized: dict[str, bool] = {}
        self.expanded: dict[str, ExpandedApp] = {}
        for app, sync in generated:
            self.apps[app.name] = sync
            self.expanded[app.name] = app
            self.finalized[app.name] = RESOURCES_FINALIZER in (app.body["metadata"].get("finalizers") or [])
            sync.generated_by = name
        self.errors: dict[str, str] = {}

    def reconcile(self) -> bool:
        """One reconcile: validate and create. True if an app was created or the errors changed."""
        moved = False
        errors = {}
        for name in sorted(self.apps):
            why = self.refusal(self.expanded[name])
            if why:
                errors[name] = why
                continue
            sync = self.apps[name]
            if not sync.created:
                sync.created = True
                moved = True
        if errors != self.errors:
            self.errors = errors
            moved = True
        return moved

    def status(self) -> dict[str, Any]:
        """What the controller writes into the ApplicationSet's status."""
        if self.errors:
            first = sorted(self.errors)[0]
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            condition = {
                "type": "ErrorOccurred",
                "status": "True",
                "message": f"{first}: {self.errors[first]}{more}",
            }
        else:
            condition = {
                "type": "ResourcesUpToDate",
                "status": "True",
                "message": "All applications have been generated successfully",
            }
        resources = []
        for name in sorted(self.apps):
            sync = self.apps[name]
            if not sync.created:
                continue
            health, _ = sync.health()
            resources.append({
                "group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "name": name,
                "status": sync.sync_status(), "health": {"status": health},
            })  # fmt: skip
        return {"conditions": [condition], "resources": resources, "resourcesCount": len(resources)}

    def add(self, app: ExpandedApp, sync: AppSync) -> None:
        """A new element (a commit added it): generated at the next reconcile."""
        self.apps[app.name] = sync
        self.expanded[app.name] = app
        self.finalized[app.name] = RESOURCES_FINALIZER in (app.body["metadata"].get("finalizers") or [])
        sync.generated_by = self.name

    def remove(self, name: str) -> Deletion:
        """The app's element is gone: the controller deletes its Application."""
        sync = self.apps.pop(name)
        self.expanded.pop(name)
        return delete_application(sync, finalizer=self.finalized.pop(name))
