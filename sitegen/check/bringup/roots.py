"""A root Application: one whose folder holds Applications and ApplicationSets (the hub's root, a
spoke's root), as Argo CD syncs it and assesses what it holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.appset import AppSetController, builtin_health
from sitegen.check.bringup.argo import AppSync
from sitegen.check.bringup.objects import key_of


class RootSync(AppSync):
    """A root: an Application whose objects are Applications (literal ones, nested roots) and
    ApplicationSets. It creates a child once it has applied it; an ApplicationSet's controller
    generates once the set exists. Their health, as the root's sync waves wait on it, is argocd-cm's
    check run on the status Argo CD writes (an Application's sync and health; a set's conditions and
    `status.resources`), else the built-in one."""

    children: dict[str, AppSync]
    appsets: dict[str, AppSetController]

    def step(self) -> bool:
        moved = super().step()
        for (_, kind, _, name), applied in self.cluster.of_kind("Application", "ApplicationSet"):
            if applied.owner != self.name:
                continue
            child = self.children.get(name) if kind == "Application" else None
            if child is not None and not child.created:
                child.created = True
                moved = True
            if kind == "ApplicationSet" and name in self.appsets:
                moved |= self.appsets[name].reconcile()
        return moved

    def object_health(self, body: Mapping[str, Any]) -> tuple[str, str]:
        controller = (
            self.appsets.get(body["metadata"]["name"]) if body.get("kind") == "ApplicationSet" else None
        )
        if controller is None or not self.cluster.objects.get(key_of(body)):
            return super().object_health(body)
        if self.checks.script("argoproj.io", "ApplicationSet") is None:
            return builtin_health(controller.status())
        return super().object_health(body)

    def live_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A child's status as Argo CD writes it: an Application's sync and health, an ApplicationSet's
        conditions and resources."""
        name = body["metadata"]["name"]
        if body.get("kind") == "ApplicationSet" and name in self.appsets:
            return self.appsets[name].status()
        if body.get("kind") != "Application":
            return super().live_status(body)
        child = self.children[name]
        status, why = child.health()
        return {
            "sync": {"status": child.sync_status()},
            "health": {"status": status, **({"message": why} if why else {})},
        }
