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

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from constructs.argocd import SYNC_WAVE
from sitegen.check.appsets import ExpandedApp, applications, texts_files
from sitegen.check.bringup.appset import AppSetController
from sitegen.check.bringup.argo import HEALTHY, AppSync, Failure
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.drift import has, ignored, value_at
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.finish import check_node_identity
from sitegen.check.bringup.health import HealthChecks
from sitegen.check.bringup.objects import key_of, show
from sitegen.check.bringup.roots import RootSync
from sitegen.check.bringup.scripts import run_api_jobs
from sitegen.check.bringup.state import SimulationState
from sitegen.compose.delivery import RESPECT_IGNORES
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig
from sitegen.tree.runbook import RunbookStep

CLUSTER_SECRET_LABEL = "argocd.argoproj.io/secret-type"


class Convergence:
    """Argo CD and the clusters' controllers over the simulation's state; the runbook's steps that wait
    on an Application are run by the replay it is given (`converge`)."""

    def __init__(self, state: SimulationState) -> None:
        self.state = state

    # ---- Argo CD -------------------------------------------------------------------------------
    def start_root(self, root: Mapping[str, Any]) -> None:
        """The runbook applied the hub's root: every Application and ApplicationSet under it, nested
        roots included, is known from here on (each created once its parent applies it)."""
        hub = self.state.clusters[self.state.layout.hub.name]
        config = hub.find("ConfigMap", self.state.argocd_namespace, "argocd-cm")
        self.state.checks = HealthChecks.from_config_map((config.body.get("data") or {}) if config else {})
        bootstrap = self.state.repo_path(root["spec"]["source"]["path"])
        self.state.projects = {
            b["metadata"]["name"]: b for b in self.state.docs_in(bootstrap) if b.get("kind") == "AppProject"
        }
        self.state.root = self._root_sync(root)
        self.state.root.created = True
        self.state.event(hub.name, f"root Application: {len(self.state.apps)} Applications to create")

    def _source(self, app: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The objects an Application's source renders: its folder, recursively if it says so."""
        source = dig(app, "spec", "source") or {}
        folder = self.state.repo_path(str(source.get("path", "")))
        recurse = bool(dig(source, "directory", "recurse"))
        return self.state.docs_under(folder) if recurse else self.state.docs_in(folder)

    def _root_sync(self, body: Mapping[str, Any]) -> RootSync:
        """An Application whose source holds Applications and ApplicationSets: a root, with its children."""
        hub = self.state.clusters[self.state.layout.hub.name]
        name = body["metadata"]["name"]
        objects = [
            b
            for b in self._source(body)
            if not (b.get("kind") == "Application" and b["metadata"]["name"] == name)
        ]
        root = RootSync(
            name, hub, objects,
            sync_options=list(body["spec"]["syncPolicy"].get("syncOptions") or []),
            destination_namespace=body["spec"]["destination"]["namespace"],
            retry_limit=int(body["spec"]["syncPolicy"].get("retry", {}).get("limit", 0)),
            registered=lambda: None, providers=self.state.providers,
        )  # fmt: skip
        root.checks = self.state.checks
        root.children, root.appsets = {}, {}
        prefix = self.state.positions.get(name, ())[:-1]
        for index, child in enumerate(objects):
            kind = child.get("kind")
            if kind == "Application":
                wave = int((dig(child["metadata"], "annotations", SYNC_WAVE)) or 0)
                if any(b.get("kind") in ("Application", "ApplicationSet") for b in self._source(child)):
                    self.state.positions[child["metadata"]["name"]] = (*prefix, wave, float("inf"))
                    nested = self._root_sync(child)
                    nested.wave = wave
                    self.state.apps[nested.name] = root.children[nested.name] = nested
                    continue
                (app,) = self._expand(child, index)
                root.children[app.name] = self.app_sync(app)
                self.state.positions[app.name] = (*prefix, wave)
            elif kind == "ApplicationSet":
                generated = [(a, self.app_sync(a)) for a in self._expand(child, index)]
                for app, _ in generated:
                    self.state.positions[app.name] = (*prefix, int(app.wave or 0))
                set_name = child["metadata"]["name"]
                root.appsets[set_name] = AppSetController(
                    set_name, child["spec"], generated, refusal=self._generation_refusal
                )
        return root

    def _expand(self, body: Mapping[str, Any], index: int) -> list[ExpandedApp]:
        hub = self.state.clusters[self.state.layout.hub.name]
        generated, errors = applications(
            [Document(PurePosixPath(f"{index}.yaml"), 0, dict(body))], texts_files(self.state.texts)
        )
        for _, error in errors:
            raise Stop(
                Blocker(hub.name, self.state.step, body["metadata"]["name"], f"{error.path}: {error.message}")
            )
        return generated

    def app_sync(self, app: ExpandedApp) -> AppSync:
        """One Application (literal, or generated by an ApplicationSet) as Argo CD syncs it."""
        hub = self.state.clusters[self.state.layout.hub.name]
        servers = {self.state.layout.server(c): c.name for c in self.state.layout.clusters}
        server, namespace = app.destination
        cluster = servers.get(server)
        if cluster is None:
            raise Stop(
                Blocker(
                    hub.name, self.state.step, app.name, f"destination {server} is no cluster of the variant"
                )
            )
        policy = app.spec.get("syncPolicy") or {}
        automated = policy.get("automated")
        sync = AppSync(
            app.name, self.state.clusters[cluster], self.state.docs_under(self.state.repo_path(app.sources[0]["path"])),
            sync_options=list(policy.get("syncOptions") or []),
            destination_namespace=namespace,
            retry_limit=int(dig(policy, "retry", "limit", default=0)),
            registered=self._registration(server, cluster),
            providers=self.state.providers,
        )  # fmt: skip
        sync.wave = int(app.wave or 0)
        sync.policy = (self.state.projects.get(app.project), server, str(app.sources[0].get("repoURL", "")))
        sync.automated = automated is not None and automated.get("enabled", True) is not False
        sync.prunes = bool(dig(automated, "prune"))
        sync.self_heal = bool(dig(automated, "selfHeal"))
        sync.ignore_differences = list(app.spec.get("ignoreDifferences") or [])
        sync.reachable = self._reachability(cluster)
        sync.checks = self.state.checks
        sync.timed = self.state.day2
        self.state.apps[app.name] = sync
        return sync

    def _generation_refusal(self, app: ExpandedApp) -> str | None:
        """Why the ApplicationSet controller would not create or update the app now
        (validateGeneratedApplications): its project does not exist, or its cluster is not registered."""
        hub = self.state.clusters[self.state.layout.hub.name]
        if hub.find("AppProject", self.state.argocd_namespace, app.project) is None:
            return f"application references project {app.project} which does not exist"
        server, _ = app.destination
        cluster = {self.state.layout.server(c): c.name for c in self.state.layout.clusters}.get(
            server, server
        )
        return self._registration(server, cluster)()

    def _not_created(self, app: AppSync) -> str:
        """Why an app was never created: its root never applied it, or its set did not generate it."""
        assert self.state.root is not None
        roots = [self.state.root, *(a for a in self.state.apps.values() if isinstance(a, RootSync))]
        for root in roots:
            for controller in root.appsets.values():
                if app.name in controller.apps:
                    if app.name in controller.errors:
                        return f"ApplicationSet {controller.name} does not generate it: {controller.errors[app.name]}"
                    return f"ApplicationSet {controller.name} was never applied: {root.name} is {root.health()[1]}"
            if app.name in root.children:
                return f"{root.name} never applied it: {root.health()[1]}"
        return "nothing creates it"

    def _reachability(self, cluster: str) -> Any:
        return lambda: (
            f"cluster {cluster} is unreachable: Argo CD cannot compare or sync"
            if cluster in self.state.unreachable
            else None
        )

    def _registration(self, server: str, cluster: str) -> Any:
        hub = self.state.clusters[self.state.layout.hub.name]
        if cluster == hub.name:
            return lambda: None

        def registered() -> str | None:
            for (_, _, ns, _), applied in hub.of_kind("ExternalSecret"):
                template = dig(applied.body, "spec", "target", "template") or {}
                if ns == self.state.argocd_namespace and dig(template, "data", "server") == server:
                    labels = dig(template, "metadata", "labels") or {}
                    if labels.get(CLUSTER_SECRET_LABEL) != "cluster":
                        return (
                            f"cluster {cluster} is not registered with Argo CD: its Secret lacks the label "
                            f"{CLUSTER_SECRET_LABEL}=cluster, the only Secrets Argo CD reads as clusters"
                        )
                    why = hub.secrets.external_secret_ready(applied.body)
                    return None if why is None else f"cluster {cluster} is not registered with Argo CD: {why}"
            return f"cluster {cluster} is not registered with Argo CD (no cluster Secret for {server})"

        return registered

    def round(self) -> bool:
        """Every cluster's controllers, then every sync one step; True if anything moved."""
        assert self.state.root is not None
        moved = False
        for cluster in self.state.clusters.values():
            before = cluster.changes
            cluster.reconcile(self.state.rails[cluster.name])
            self.state.writers.run(cluster)
            moved |= cluster.changes != before
            self._judge_writes(cluster)
        for sync in [self.state.root, *self.state.apps.values()]:
            failures = len(sync.failures)
            moved |= sync.step()
            for failure in sync.failures[failures:]:
                self._judge(sync, failure)
        self.note_health()
        return moved

    def converge(self, deferred: list[RunbookStep], run_step: Callable[[RunbookStep], None]) -> None:
        if self.state.root is None:
            raise Stop(
                Blocker(
                    self.state.layout.hub.name,
                    "runbook",
                    "root",
                    "the runbook never applies the root Application",
                )
            )
        self.state.step = "Argo CD"
        while True:
            moved = self.round()
            for step in list(deferred):
                app = self.state.apps.get(step.after_app or "")
                if app is None:
                    raise Stop(
                        Blocker(
                            "-",
                            step.label,
                            step.after_app or "",
                            "waits on an Application that does not exist",
                        )
                    )
                if app.name in self.state.healthy:
                    deferred.remove(step)
                    run_step(step)
                    self.state.step = "Argo CD"
                    moved = True
            if not moved:
                break
        self._final(deferred)

    def settle(self) -> None:
        """Controllers and syncs run until nothing moves (day 2: no runbook step waits)."""
        while self.round():
            pass

    def _judge_writes(self, cluster: Cluster) -> None:
        """A controller wrote a field of a live object: if the Application that synced the object holds
        the field in Git and does not ignore it (with RespectIgnoreDifferences, so that a sync keeps the
        live value), the app is OutOfSync for good, and its self-heal writes Git's value back over the
        controller's."""
        seen = self.state._written.get(cluster.name, 0)
        for key, pointer, by in cluster.written[seen:]:
            applied = cluster.objects.get(key)
            sync = self.state.apps.get(applied.owner) if applied else None
            desired = next((b for b in sync.objects if key_of(b) == key), None) if sync else None
            if sync is None or desired is None or not has(desired, pointer):
                continue
            if ignored(sync.ignore_differences, desired, pointer) and RESPECT_IGNORES in sync.sync_options:
                continue
            why = (
                "ignored, but a sync without RespectIgnoreDifferences=true writes Git's value back"
                if ignored(sync.ignore_differences, desired, pointer)
                else "Git owns it: the app stays OutOfSync, and self-heal writes Git's value back"
            )
            raise Stop(Blocker(
                cluster.name, self._where(sync), sync.name,
                f"{show(key)}: {by} writes {pointer}, which is in Git ({value_at(desired, pointer)!r}); {why} "
                "(leave it out of Git, or ignore it with RespectIgnoreDifferences=true)",
            ))  # fmt: skip
        self.state._written[cluster.name] = len(cluster.written)

    def _judge(self, sync: AppSync, failure: Failure) -> None:
        """A failed attempt an app's own retry fixes is Argo CD as usual. On the first install one
        that waits on another app is an ordering defect: it converges, if at all, only by retrying
        until the other app is there. On day 2 nothing orders the apps (each syncs itself, refreshed in
        no given order): retrying is what converges, so only an app whose retries ran out stops it."""
        if failure.provider is None or failure.provider == sync.name or self.state.day2:
            self.state.result.retried.append(failure)
            return
        raise Stop(Blocker(
            sync.cluster.name, self._where(sync), sync.name,
            f"sync failed before {failure.provider} was Healthy (sync wave {sync.wave}"
            f"{self._wave_note(failure.provider)}): {failure}",
        ))  # fmt: skip

    def _wave_note(self, provider: str) -> str:
        app = self.state.apps.get(provider)
        return f" vs {app.wave}" if app is not None else ""

    def _where(self, sync: AppSync) -> str:
        """Where the Argo CD bring-up stands for `sync`: its ApplicationSet, or its root's wave."""
        if sync.generated_by:
            return f"ApplicationSet {sync.generated_by}"
        return f"root wave {self._root_wave()}"

    def _root_wave(self) -> str:
        if self.state.root is None or not self.state.root.groups:
            return "-"
        group = self.state.root.groups[min(self.state.root._group, len(self.state.root.groups) - 1)]
        return str(int(dig(group[0], "metadata", "annotations", SYNC_WAVE, default="0")))

    def note_health(self) -> None:
        """Log, by the wave of the Application they belong to, what became Healthy and what the
        controllers did in this round."""
        # (position, kind, order, cluster, label, what); a position orders by the roots' waves
        events: list[tuple[tuple[float, ...], int, int, str, str, str]] = []
        current = self._wave_of("")
        here = f"wave {current}" if self.state.step == "Argo CD" else self.state.step
        for cluster in self.state.clusters.values():
            for line in cluster.node_agents.device_report():
                events.append(((current,), 0, len(events), cluster.name, here, line))
            for owner, line in cluster.log:
                label = f"wave {self._wave_of(owner)}" if owner in self.state.apps else here
                events.append((self._position(owner), 0, len(events), cluster.name, label, line))
            cluster.log.clear()
        for name, app in self.state.apps.items():
            if name not in self.state.healthy and app.synced and app.health()[0] == HEALTHY:
                self.state.healthy.add(name)
                events.append(
                    (self._position(name), 1, len(events), app.cluster.name, f"wave {app.wave}", name)
                )
        healthy: dict[tuple[tuple[float, ...], str, str], list[str]] = {}
        for position, kind, _, cluster, label, what in sorted(events):
            if kind == 1:
                healthy.setdefault((position, cluster, label), []).append(what)
                continue
            self._flush(healthy, before=position)
            self.state.result.timeline.append(Event(cluster, label, what))
        self._flush(healthy, before=None)

    def _flush(
        self, healthy: dict[tuple[tuple[float, ...], str, str], list[str]], before: tuple[float, ...] | None
    ) -> None:
        for position, cluster, label in sorted(healthy):
            if before is None or position < before:
                names = healthy.pop((position, cluster, label))
                self.state.result.timeline.append(Event(cluster, label, "Healthy: " + ", ".join(names)))

    def _position(self, owner: str) -> tuple[float, ...]:
        """Where an app's events sort: its wave in the hub's root, then in its spoke's root (a spoke's
        root after the apps it holds)."""
        return self.state.positions.get(owner, (self._wave_of(owner),))

    def _wave_of(self, owner: str) -> int:
        app = self.state.apps.get(owner)
        if app is not None:
            return app.wave
        return int(self._root_wave()) if self._root_wave().lstrip("-").isdigit() else -99

    def drain(self) -> None:
        """Move what the controllers did outside Argo CD's syncs into the timeline."""
        for cluster in self.state.clusters.values():
            lines = [*cluster.node_agents.device_report(), *(line for _, line in cluster.log)]
            cluster.log.clear()
            for line in lines:
                self.state.result.timeline.append(Event(cluster.name, self.state.step, line))

    def _final(self, deferred: list[RunbookStep]) -> None:
        assert self.state.root is not None
        # the first app the install order reaches that is not up; a root only when none of its own
        # apps is the reason (a root is sick when what it holds is)
        sick = sorted(
            (isinstance(app, RootSync), self._position(name), name)
            for name, app in self.state.apps.items()
            if app.health()[0] != HEALTHY or app.sync_status() != "Synced"
        )  # fmt: skip
        if sick:
            _, _, name = sick[0]
            app = self.state.apps[name]
            status, why = app.health()
            if status == HEALTHY:
                status, why = (
                    app.sync_status(),
                    f"{len(app.drifted())} objects differ from Git, {len(app.unpruned)} wait to be pruned",
                )
            if not app.created:
                status, why = "never created", self._not_created(app)
            raise Stop(Blocker(app.cluster.name, self._where(app), name, f"{status}: {why}"))
        status, why = self.state.root.health()
        if status != HEALTHY or self.state.root.sync_status() != "Synced":
            raise Stop(Blocker(self.state.layout.hub.name, "root", "root", f"{status}: {why or 'OutOfSync'}"))
        for step in deferred:
            raise Stop(Blocker("-", step.label, step.after_app or "", "never ran"))
        check_node_identity(self.state)
        self._run_shipped_scripts()
        self._rerun_queued_jobs()
        for cluster in self.state.clusters.values():
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                # a suspended CronJob never runs by itself: a template the RUNBOOK makes Jobs of
                suspended = dig(cluster.objects_body(w), "spec", "suspend")
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
            self.state.result.timeline.append(
                Event(
                    cluster.name,
                    "done",
                    f"{len(cluster.nodes)} nodes Ready, {sum(1 for a in self.state.apps.values() if a.cluster is cluster)} Applications Healthy",
                )
            )

    def _run_shipped_scripts(self) -> None:
        """The API-calling CronJobs run once, as shipped, against the cluster as it now is (scripts.py)."""
        self.state.step = "shipped scripts"
        for cluster in self.state.clusters.values():
            for ref, owner, why in run_api_jobs(cluster):
                raise self.state.blocked(cluster.name, owner, f"{ref} {why}")
        self.drain()

    def _rerun_queued_jobs(self) -> None:
        """Day 2 on day 1: the acceptance job runs again (after maintenance) while everything else
        runs. It must still be admitted, preempting what its priority allows, and what it preempted
        must come back once it completes."""
        for cluster in self.state.clusters.values():
            self.state.step = "acceptance re-run"
            # the queued Jobs an Application ships (not the burn-in Jobs the RUNBOOK made)
            jobs = [
                w
                for w in cluster.workloads.values()
                if w.done and cluster.kueue.queue_of(w) and w.owner in self.state.apps
            ]
            for job in jobs:
                job.done, job.admitted, job.reason = False, None, "submitted again"
                job.template, job.unadmitted = job.unadmitted or job.template, None  # as submitted
                cluster.changes += 1
            if not jobs:
                continue
            cluster.reconcile(self.state.rails[cluster.name])
            self.drain()
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                if w.template.kind == "CronJob" or (w.template.kind == "Job" and w not in jobs):
                    continue
                finished = w.done if w.template.kind == "Job" else w.running
                if not finished:
                    raise Stop(
                        Blocker(cluster.name, self.state.step, w.owner, f"{w.template.ref}: {w.reason}")
                    )
