"""Argo CD's part of the first install: the root Application and the Applications it creates (an
`AppSync` each, argo.py), synced round after round with every cluster's controllers until nothing moves;
a runbook step that waits on an Application runs once it is Healthy. A failed sync that the app's own
retry fixes is Argo CD as usual; one that waits on another Application is an ordering defect. The
timeline notes, by wave, what became Healthy and what the controllers did. At the end every Application
must be Synced and Healthy, every node carry its pool's labels and taints, every CronJob have a node to
run on, and the queued acceptance jobs run again beside everything else.

Not modelled: time (a round is a step of every sync: retries have no backoff, waits no timeout), and
Argo CD's own components (they are the root's objects like any other).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.appsets import applications, texts_files
from sitegen.check.bringup.argo import HEALTHY, AppSync, Failure
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.health import HealthChecks
from sitegen.check.bringup.kube import Taint
from sitegen.check.bringup.objects import key_of
from sitegen.check.bringup.rollout import Rollout, progressive_syncs_enabled
from sitegen.check.bringup.runbook import RunbookStep
from sitegen.check.bringup.scripts import run_api_jobs
from sitegen.check.bringup.state import SimulationState
from sitegen.check.tree import Document

CLUSTER_SECRET_LABEL = "argocd.argoproj.io/secret-type"


class Convergence(SimulationState):
    """Mixed into `Simulation` (simulate.py) with `RunbookReplay`, whose `_run_step` runs the steps that
    wait on an Application."""

    # ---- Argo CD -------------------------------------------------------------------------------
    def _start_root(self, root: Mapping[str, Any]) -> None:
        hub = self.clusters[self.layout.hub.name]
        bootstrap = self._repo_path(root["spec"]["source"]["path"])
        bodies = [
            b
            for b in self._docs_under(bootstrap)
            if not (b.get("kind") == "Application" and b["metadata"]["name"] == "root")
        ]
        servers = {self.layout.server(c): c.name for c in self.layout.clusters}
        config = hub.find("ConfigMap", self.argocd_namespace, "argocd-cm")
        checks = HealthChecks.from_config_map((config.body.get("data") or {}) if config else {})
        params = hub.find("ConfigMap", self.argocd_namespace, "argocd-cmd-params-cm")
        progressive = progressive_syncs_enabled((params.body.get("data") or {}) if params else {})
        rollouts: dict[str, Rollout] = {}
        projects = {b["metadata"]["name"]: b for b in bodies if b.get("kind") == "AppProject"}
        for index, body in enumerate(bodies):
            if body.get("kind") not in ("Application", "ApplicationSet"):
                continue
            generated, errors = applications(
                [Document(bootstrap / f"{index}.yaml", 0, body)], texts_files(self.texts)
            )
            for _, error in errors:
                raise Stop(
                    Blocker(hub.name, self.step, body["metadata"]["name"], f"{error.path}: {error.message}")
                )
            for app in generated:
                server, namespace = app.destination
                cluster = servers.get(server)
                if cluster is None:
                    raise Stop(
                        Blocker(
                            hub.name,
                            self.step,
                            app.name,
                            f"destination {server} is no cluster of the variant",
                        )
                    )
                source = self._repo_path(app.sources[0]["path"])
                self.apps[app.name] = AppSync(
                    app.name, self.clusters[cluster], self._docs_under(source),
                    sync_options=list((app.spec.get("syncPolicy") or {}).get("syncOptions") or []),
                    destination_namespace=namespace,
                    retry_limit=int(((app.spec.get("syncPolicy") or {}).get("retry") or {}).get("limit", 0)),
                    registered=self._registration(server, cluster),
                    providers=self.providers,
                )  # fmt: skip
                self.apps[app.name].wave = int(app.wave or 0)
                self.apps[app.name].policy = (
                    projects.get(app.project),
                    server,
                    str(app.sources[0].get("repoURL", "")),
                )
                self.apps[app.name].prunes = bool(
                    ((app.spec.get("syncPolicy") or {}).get("automated") or {}).get("prune")
                )
            if body["kind"] == "ApplicationSet":
                name = body["metadata"]["name"]
                rollouts[name] = Rollout(
                    name, body["spec"], [(self.apps[a.name], a.body) for a in generated], enabled=progressive
                )
        self.root = RootSync(
            "root", hub, bodies,
            sync_options=list(root["spec"]["syncPolicy"].get("syncOptions") or []),
            destination_namespace=root["spec"]["destination"]["namespace"],
            retry_limit=int(root["spec"]["syncPolicy"].get("retry", {}).get("limit", 0)),
            registered=lambda: None, providers=self.providers,
        )  # fmt: skip
        self.root.children = self.apps
        self.root.rollouts = rollouts
        for sync in (self.root, *self.apps.values()):
            sync.checks = checks
        self.root.created = True
        self._event(hub.name, f"root Application: {len(self.apps)} Applications to create")

    def _registration(self, server: str, cluster: str) -> Any:
        hub = self.clusters[self.layout.hub.name]
        if cluster == hub.name:
            return lambda: None

        def registered() -> str | None:
            for (_, kind, ns, _), applied in hub.objects.items():
                template = ((applied.body.get("spec") or {}).get("target") or {}).get("template") or {}
                if (
                    kind == "ExternalSecret"
                    and ns == self.argocd_namespace
                    and (template.get("data") or {}).get("server") == server
                ):
                    labels = (template.get("metadata") or {}).get("labels") or {}
                    if labels.get(CLUSTER_SECRET_LABEL) != "cluster":
                        return (
                            f"cluster {cluster} is not registered with Argo CD: its Secret lacks the label "
                            f"{CLUSTER_SECRET_LABEL}=cluster, the only Secrets Argo CD reads as clusters"
                        )
                    why = hub.external_secret_ready(applied.body)
                    return None if why is None else f"cluster {cluster} is not registered with Argo CD: {why}"
            return f"cluster {cluster} is not registered with Argo CD (no cluster Secret for {server})"

        return registered

    def _converge(self, deferred: list[RunbookStep]) -> None:
        if self.root is None:
            raise Stop(
                Blocker(
                    self.layout.hub.name, "runbook", "root", "the runbook never applies the root Application"
                )
            )
        self.step = "Argo CD"
        syncs = [self.root, *self.apps.values()]
        while True:
            moved = False
            for cluster in self.clusters.values():
                before = cluster.changes
                cluster.reconcile(self.rails[cluster.name])
                moved |= cluster.changes != before
            for sync in syncs:
                failures = len(sync.failures)
                moved |= sync.step()
                for failure in sync.failures[failures:]:
                    self._judge(sync, failure)
            self._note_health()
            for step in list(deferred):
                app = self.apps.get(step.after_app or "")
                if app is None:
                    raise Stop(
                        Blocker(
                            "-",
                            step.label,
                            step.after_app or "",
                            "waits on an Application that does not exist",
                        )
                    )
                if app.name in self.healthy:
                    deferred.remove(step)
                    self._run_step(step)
                    self.step = "Argo CD"
                    moved = True
            if not moved:
                break
        self._final(deferred)

    def settle(self) -> None:
        """Controllers and syncs run until nothing moves (day 2: no runbook step waits)."""
        syncs = [s for s in (self.root, *self.apps.values()) if s is not None]
        while True:
            moved = False
            for cluster in self.clusters.values():
                before = cluster.changes
                cluster.reconcile(self.rails[cluster.name])
                moved |= cluster.changes != before
            for sync in syncs:
                failures = len(sync.failures)
                moved |= sync.step()
                for failure in sync.failures[failures:]:
                    self._judge(sync, failure)
            self._note_health()
            if not moved:
                return

    def _judge(self, sync: AppSync, failure: Failure) -> None:
        """A failed attempt an app's own retry fixes is Argo CD as usual; one waiting on another app is
        an ordering defect: it converges, if at all, only by retrying until the other app is there."""
        if failure.provider is None or failure.provider == sync.name:
            self.result.retried.append(failure)
            return
        wave = sync.wave
        raise Stop(Blocker(
            sync.cluster.name, self._where(sync), sync.name,
            f"sync failed before {failure.provider} was Healthy (sync wave {wave}"
            f"{self._wave_note(failure.provider)}): {failure}",
        ))  # fmt: skip

    def _wave_note(self, provider: str) -> str:
        app = self.apps.get(provider)
        if app is None:
            return ""
        rollout = self.root.rollouts.get(app.generated_by) if self.root else None
        unordered = rollout is not None and not rollout.rolling
        return f" vs {app.wave}" + (
            f"; generated by ApplicationSet {rollout.name} without a RollingSync: nothing orders its apps"
            if unordered and rollout
            else ""
        )

    def _where(self, sync: AppSync) -> str:
        """Where the Argo CD bring-up stands for `sync`: its RollingSync step, or the root's wave."""
        rollout = self.root.rollouts.get(sync.generated_by) if self.root else None
        return rollout.step_label(sync.name) if rollout else f"root wave {self._root_wave()}"

    def _root_wave(self) -> str:
        if self.root is None or not self.root.groups:
            return "-"
        group = self.root.groups[min(self.root._group, len(self.root.groups) - 1)]
        return str(
            int(
                ((group[0].get("metadata") or {}).get("annotations") or {}).get(
                    "argocd.argoproj.io/sync-wave", "0"
                )
            )
        )

    def _note_health(self) -> None:
        """Log, by the wave of the Application they belong to, what became Healthy and what the
        controllers did in this round."""
        events: list[tuple[int, int, int, str, str, str]] = []  # wave, kind, order, cluster, label, what
        current = self._wave_of("")
        here = f"wave {current}" if self.step == "Argo CD" else self.step
        for cluster in self.clusters.values():
            for line in cluster.device_report():
                events.append((current, 0, len(events), cluster.name, here, line))
            for owner, line in cluster.log:
                wave = self._wave_of(owner)
                label = f"wave {wave}" if owner in self.apps else here
                events.append((wave, 0, len(events), cluster.name, label, line))
            cluster.log.clear()
        for name, app in self.apps.items():
            if name not in self.healthy and app.synced and app.health()[0] == HEALTHY:
                self.healthy.add(name)
                events.append((app.wave, 1, len(events), app.cluster.name, "", name))
        healthy: dict[tuple[int, str], list[str]] = {}
        for wave, kind, _, cluster, label, what in sorted(events):
            if kind == 1:
                healthy.setdefault((wave, cluster), []).append(what)
                continue
            self._flush(healthy, before=wave)
            self.result.timeline.append(Event(cluster, label, what))
        self._flush(healthy, before=None)

    def _flush(self, healthy: dict[tuple[int, str], list[str]], before: int | None) -> None:
        for wave, cluster in sorted(healthy):
            if before is None or wave < before:
                names = healthy.pop((wave, cluster))
                self.result.timeline.append(Event(cluster, f"wave {wave}", "Healthy: " + ", ".join(names)))

    def _wave_of(self, owner: str) -> int:
        app = self.apps.get(owner)
        if app is not None:
            return app.wave
        return int(self._root_wave()) if self._root_wave().lstrip("-").isdigit() else -99

    def _drain(self) -> None:
        """Move what the controllers did outside Argo CD's syncs into the timeline."""
        for cluster in self.clusters.values():
            lines = [*cluster.device_report(), *(line for _, line in cluster.log)]
            cluster.log.clear()
            for line in lines:
                self.result.timeline.append(Event(cluster.name, self.step, line))

    def _final(self, deferred: list[RunbookStep]) -> None:
        assert self.root is not None
        sick = sorted(
            (app.wave, name) for name, app in self.apps.items() if app.health()[0] != HEALTHY or not app.synced
        )  # fmt: skip
        if sick:
            _, name = sick[0]
            app = self.apps[name]
            status, why = app.health()
            if not app.created:
                status, why = "never created", f"the root is stuck: {self.root.health()[1]}"
            raise Stop(Blocker(app.cluster.name, self._where(app), name, f"{status}: {why}"))
        status, why = self.root.health()
        if status != HEALTHY:
            raise Stop(Blocker(self.layout.hub.name, "root", "root", f"{status}: {why}"))
        for step in deferred:
            raise Stop(Blocker("-", step.label, step.after_app or "", "never ran"))
        self._check_node_identity()
        self._run_shipped_scripts()
        self._rerun_queued_jobs()
        for cluster in self.clusters.values():
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                # a suspended CronJob never runs by itself: a template the RUNBOOK makes Jobs of
                suspended = (cluster.objects_body(w).get("spec") or {}).get("suspend")
                if w.template.kind == "CronJob" and not suspended:
                    nodes = [
                        n
                        for n in cluster.nodes.values()
                        if w.template.why_not(n) is None and not n.fits({**w.template.requests, "pods": 1})
                    ]
                    if not nodes:
                        raise Stop(
                            Blocker(
                                cluster.name,
                                "after sync",
                                w.owner,
                                f"{w.template.ref} can never run: no node takes its pods",
                            )
                        )
            self.result.timeline.append(
                Event(
                    cluster.name,
                    "done",
                    f"{len(cluster.nodes)} nodes Ready, {sum(1 for a in self.apps.values() if a.cluster is cluster)} Applications Healthy",
                )
            )

    def _check_node_identity(self) -> None:
        """The seed's labels and taints reached every node: labels by the runbook and the kubelet's
        own node-labels, taints at registration only (nothing in dist/ creates a Node)."""
        self.step = "nodes"
        for cluster in self.clusters.values():
            for node in cluster.nodes.values():
                pool = self.hosts[node.name]
                missing = {k: v for k, v in pool.labels.items() if node.labels.get(k) != v}
                if missing:
                    label = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
                    raise Stop(
                        Blocker(cluster.name, self.step, node.name, f"lacks its pool's labels: {label}")
                    )
                taints = {Taint(t.key, t.value or "", t.effect) for t in pool.taints}
                if not taints <= set(node.taints):
                    absent = ", ".join(sorted(map(str, taints - set(node.taints))))
                    raise Stop(
                        Blocker(cluster.name, self.step, node.name, f"lacks its pool's taints: {absent}")
                    )
            self.result.timeline.append(
                Event(
                    cluster.name,
                    self.step,
                    f"every node carries its pool's labels and taints ({len(cluster.nodes)})",
                )
            )

    def _run_shipped_scripts(self) -> None:
        """The API-calling CronJobs run once, as shipped, against the cluster as it now is (scripts.py)."""
        self.step = "shipped scripts"
        for cluster in self.clusters.values():
            for ref, owner, why in run_api_jobs(cluster):
                raise Stop(Blocker(cluster.name, self.step, owner, f"{ref} {why}"))
        self._drain()

    def _rerun_queued_jobs(self) -> None:
        """Day 2 on day 1: the acceptance job runs again (after maintenance) while everything else
        runs. It must still be admitted, preempting what its priority allows, and what it preempted
        must come back once it completes."""
        for cluster in self.clusters.values():
            self.step = "acceptance re-run"
            jobs = [w for w in cluster.workloads.values() if w.done and cluster.queue_of(w)]
            for job in jobs:
                job.done, job.admitted, job.reason = False, None, "submitted again"
                job.template, job.unadmitted = job.unadmitted or job.template, None  # as submitted
                cluster.changes += 1
            if not jobs:
                continue
            cluster.reconcile(self.rails[cluster.name])
            self._drain()
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                if w.template.kind == "CronJob" or (w.template.kind == "Job" and w not in jobs):
                    continue
                finished = w.done if w.template.kind == "Job" else w.running
                if not finished:
                    raise Stop(Blocker(cluster.name, self.step, w.owner, f"{w.template.ref}: {w.reason}"))


class RootSync(AppSync):
    children: dict[str, AppSync]
    rollouts: dict[str, Rollout]

    def step(self) -> bool:
        moved = super().step()
        for (_, kind, _, name), applied in self.cluster.of_kind("Application", "ApplicationSet"):
            if applied.owner == self.name:
                for child in self.children.values():
                    if (child.name == name or child.generated_by == name) and not child.created:
                        child.created = True
                        moved = True
                if kind == "ApplicationSet" and name in self.rollouts:
                    moved |= self.rollouts[name].advance()
        return moved

    def object_health(self, body: Mapping[str, Any]) -> tuple[str, str]:
        rollout = (
            self.rollouts.get(body["metadata"]["name"]) if body.get("kind") == "ApplicationSet" else None
        )
        if rollout is None or not self.cluster.objects.get(key_of(body)):
            return super().object_health(body)
        return rollout.health()

    def live_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A child Application's status as Argo CD writes it: its sync and its health."""
        if body.get("kind") != "Application":
            return super().live_status(body)
        child = self.children[body["metadata"]["name"]]
        status, why = child.health()
        return {
            "sync": {"status": "Synced" if child.synced else "OutOfSync"},
            "health": {"status": status, **({"message": why} if why else {})},
        }
