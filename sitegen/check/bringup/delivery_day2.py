"""Day 2 of the delivery, once the first install is up: commits, drift and trouble, as Argo CD v3.4.7
handles them with this shape (every app syncs, prunes and heals itself; the roots apply only what
changed and wait only on that).

- Every commit moves every app's revision; an app whose objects did not change compares Synced at the
  new revision and Argo CD starts nothing (auto-sync acts only on OutOfSync: appcontroller.go
  autoSync). An app whose objects changed syncs by itself, in no order relative to the others (each
  app refreshes when it does): a consumer may sync before the chart that serves its new kind, fail,
  and converge on its retry.
- A chart bump that adds a CRD and its first consumer, refreshed consumer first.
- Drift of an admission policy: self-heal restores it.
- An object removed from an app: pruned; one that keeps data (Prune=false) stays, the app OutOfSync.
- An app renamed: its ApplicationSet deletes the old Application (no resources finalizer: nothing
  deleted, no delete hook in dist/) and the new one adopts the objects.
- A failed app: it stops after its retries, Degraded, while the rest of the commit lands.
- A spoke not registered (new, or its cluster Secret gone) and a spoke unreachable: its sets cannot
  generate or its apps are Unknown; the hub's changes land, and its root waits on nothing.
- A GPU node NotReady while a chart bump lands (day2.py runs it last): the DaemonSet apps with a pod
  there stay Progressing and hold nothing; the root applies a changed ApplicationSet and waits on it
  alone.

Not modelled: time (a retry's backoff, self-heal's backoff, the controllers' requeue), the refresh of
apps whose revision moved without a change (nothing happens to them), Argo CD's own outage.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sitegen.check.bringup.appset import AppSetController
from sitegen.check.bringup.argo import HEALTHY, AppSync
from sitegen.check.bringup.events import Event
from sitegen.check.bringup.objects import key_of, show
from sitegen.check.bringup.roots import RootSync
from sitegen.compose.ownership import keeps_data
from sitegen.model import paths

if TYPE_CHECKING:
    from sitegen.check.bringup.simulate import Simulation

CHANGED = "sitegen.io/day-2"  # the label a scenario's commit adds, where a change must land somewhere
VAP_BINDING = "ValidatingAdmissionPolicyBinding"


def _event(sim: Simulation, cluster: str, what: str) -> None:
    sim.state.result.timeline.append(Event(cluster, sim.state.step, what))


def _labelled(body: Mapping[str, Any], value: str) -> dict[str, Any]:
    changed = copy.deepcopy(dict(body))
    changed["metadata"].setdefault("labels", {})[CHANGED] = value
    return changed


def land(
    sim: Simulation, changes: Mapping[str, list[Mapping[str, Any]]], *, first: str | None = None
) -> None:
    """A commit: the apps whose objects changed go OutOfSync and sync by themselves. `first` refreshes
    and attempts its sync before the others (no order holds between apps)."""
    for name in sorted(changes, key=lambda n: n != first):
        sim.state.apps[name].resync(list(changes[name]))
        if name == first:
            sim.state.apps[name].step()
    sim.convergence.settle()


def _converged(sim: Simulation, *names: str) -> None:
    for name in names:
        app = sim.state.apps[name]
        status, why = app.health()
        if app.sync_status() != "Synced" or status != HEALTHY:
            raise sim.state.blocked(
                app.cluster.name, name, f"{app.sync_status()} and {status}: {why or app.waiting}"
            )


def _generated(sim: Simulation, cluster: str | None = None) -> list[AppSync]:
    return [
        a
        for a in sim.state.apps.values()
        if a.generated_by and (cluster is None or a.cluster.name == cluster)
    ]


def _last(sim: Simulation, cluster: str) -> AppSync:
    return max(_generated(sim, cluster), key=lambda a: (a.wave, a.name))


def _controller(sim: Simulation, app: AppSync) -> AppSetController:
    for root in _roots(sim):
        if app.generated_by in root.appsets:
            return root.appsets[app.generated_by]
    raise LookupError(app.generated_by)


def _roots(sim: Simulation) -> list[RootSync]:
    assert sim.state.root is not None
    return [sim.state.root, *(a for a in sim.state.apps.values() if isinstance(a, RootSync))]


# --- a chart bump, refreshed in the worst order ----------------------------------------------------


def a_chart_bump_refreshed_consumer_first(sim: Simulation) -> None:
    """A chart bump adds a CRD, and the same commit gives another app its first object of that kind;
    the consumer refreshes first. Its sync fails (the kind is not served) and its own retry converges
    once the chart's app has synced: what converges a bump is each app's retry, not an order."""
    found = _bump_pair(sim)
    if found is None:
        return
    provider, consumer, crd, cr = found
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"] + "Next"
    sim.state.step = (
        f"day 2: chart bump of {provider.name} adds {kind}, {consumer.name} uses it (refreshed first)"
    )
    new_crd = copy.deepcopy(dict(crd))
    plural = new_crd["spec"]["names"]["plural"] + "nexts"
    new_crd["spec"]["names"] = {**new_crd["spec"]["names"], "kind": kind, "plural": plural}
    new_crd["spec"]["names"].pop("singular", None)
    new_crd["spec"]["names"].pop("shortNames", None)
    new_crd["metadata"] = {**new_crd["metadata"], "name": f"{plural}.{group}"}
    new_cr = copy.deepcopy(dict(cr))
    new_cr["kind"] = kind
    new_cr["metadata"] = {**new_cr["metadata"], "name": f"{new_cr['metadata']['name']}-next"}
    sim.state.providers.crds[(provider.cluster.name, group, kind)] = provider.name
    # synth adds them to the apps' projects (the CRD by its name); the root applies that
    _admit(consumer, "namespaceResourceWhitelist", {"group": group, "kind": kind})
    _admit(
        provider,
        "clusterResourceWhitelist",
        {
            "group": "apiextensions.k8s.io",
            "kind": "CustomResourceDefinition",
            "name": new_crd["metadata"]["name"],
        },
    )
    before = len(consumer.failures)
    land(
        sim,
        {provider.name: [*provider.objects, new_crd], consumer.name: [*consumer.objects, new_cr]},
        first=consumer.name,
    )
    for sync in (provider, consumer):
        if sync.failed or sync.health()[0] != HEALTHY or sync.sync_status() != "Synced":
            raise sim.state.blocked(sync.cluster.name, sync.name, f"never converges: {sync.health()[1]}")
    tries = len(consumer.failures) - before
    _event(
        sim, consumer.cluster.name,
        f"{consumer.name} synced first and failed {tries} time(s) ({consumer.failures[-1].reason if tries else 'no failure'}); "
        f"its retry converged once {provider.name} had synced the CRD",
    )  # fmt: skip


def _admit(sync: AppSync, whitelist: str, entry: dict[str, str]) -> None:
    """The app's project with one more entry in a whitelist it keeps (an absent one admits nothing new)."""
    if sync.policy is None or sync.policy[0] is None:
        return
    project, server, repo = sync.policy
    spec = dict(project.get("spec") or {})
    if spec.get(whitelist) is not None:
        spec[whitelist] = [*spec[whitelist], entry]
    sync.policy = ({**project, "spec": spec}, server, repo)


def _bump_pair(sim: Simulation) -> tuple[AppSync, AppSync, Any, Any] | None:
    """The first generated consumer of a CRD that another generated app of its cluster ships."""
    for consumer in sorted(
        _generated(sim), key=lambda a: (a.cluster.name != sim.state.layout.hub.name, a.wave, a.name)
    ):
        for body in consumer.objects:
            group = body.get("apiVersion", "").rpartition("/")[0]
            owner = sim.state.providers.crds.get((consumer.cluster.name, group, body.get("kind", "")))
            provider = sim.state.apps.get(owner or "")
            if provider is None or provider is consumer or not provider.generated_by:
                continue
            crd = next(
                (b for b in provider.objects
                 if b.get("kind") == "CustomResourceDefinition"
                 and b["spec"]["group"] == group and b["spec"]["names"]["kind"] == body["kind"]),
                None,
            )  # fmt: skip
            if crd is not None:
                return provider, consumer, crd, body
    return None


# --- drift -----------------------------------------------------------------------------------------


def an_admission_policy_drifts(sim: Simulation) -> None:
    """Someone turns a guard rail off by hand (a ValidatingAdmissionPolicyBinding to Audit only): the
    app that ships it must put it back by itself."""
    for app in sorted(_generated(sim), key=lambda a: a.name):
        binding = next((b for b in app.objects if b.get("kind") == VAP_BINDING), None)
        if binding is None:
            continue
        key = key_of(binding)
        sim.state.step = f"day 2: {show(key)} set to Audit by hand"
        app.cluster.write_field(key, "/spec/validationActions", ["Audit"], None)
        sim.convergence.settle()
        live = app.cluster.objects[key].body
        if live.get("spec", {}).get("validationActions") != binding["spec"].get("validationActions"):
            raise sim.state.blocked(
                app.cluster.name,
                app.name,
                f"the drift stays: {app.sync_status()}, nothing heals it (selfHeal off)",
            )
        _event(
            sim,
            app.cluster.name,
            f"{app.name} healed it (self-heal): {binding['spec'].get('validationActions')}",
        )
        return


# --- removals and renames --------------------------------------------------------------------------


def an_object_removed(sim: Simulation) -> None:
    """A commit removes an object from an app: the app's automated sync prunes it. One that keeps data
    or takes other objects with it (Prune=false) stays, and the app shows it as requiring pruning."""
    app = _last(sim, sim.state.layout.hub.name)
    body = next((b for b in reversed(app.objects) if not keeps_data(b)), None)
    if body is not None:
        sim.state.step = f"day 2: {show(key_of(body))} removed from {app.name}"
        objects = list(app.objects)
        land(sim, {app.name: [b for b in objects if b is not body]})
        if key_of(body) in app.cluster.objects:
            raise sim.state.blocked(
                app.cluster.name, app.name, f"not pruned: {app.sync_status()} (automated prune off)"
            )
        _event(sim, app.cluster.name, "pruned by the app's automated sync")
        land(sim, {app.name: objects})  # the next commit brings it back
        _converged(sim, app.name)
    keeper = next(
        (
            a
            for a in sorted(_generated(sim, sim.state.layout.hub.name), key=lambda a: (a.wave, a.name))
            for b in a.objects
            if b.get("kind") == "CustomResourceDefinition"
        ),
        None,
    )
    if keeper is None:
        return
    crd = next(b for b in keeper.objects if b.get("kind") == "CustomResourceDefinition")
    sim.state.step = f"day 2: {show(key_of(crd))} removed from {keeper.name} (a chart bump drops it)"
    before = set(keeper.cluster.objects)
    land(sim, {keeper.name: [b for b in keeper.objects if b is not crd]})
    gone = sorted(before - set(keeper.cluster.objects))
    if gone:
        raise sim.state.blocked(
            keeper.cluster.name,
            keeper.name,
            f"pruned {len(gone)} objects with it: {', '.join(show(k) for k in gone[:4])}",
        )
    runbook = sim.state.texts[paths.bootstrap_dir(sim.state.variant) / paths.RUNBOOK]
    if "Prune=false" not in runbook:
        raise sim.state.blocked(
            keeper.cluster.name,
            keeper.name,
            "stays, OutOfSync, and the RUNBOOK says nowhere what to do with it",
        )
    _event(
        sim,
        keeper.cluster.name,
        f"kept (Prune=false), {keeper.name} {keeper.sync_status()}: the RUNBOOK's removal procedure deletes it deliberately",
    )
    land(sim, {keeper.name: [*keeper.objects, crd]})  # the chart bump reverted
    _converged(sim, keeper.name)


def an_app_renamed(sim: Simulation) -> None:
    """An app's element renamed (a component or cluster key changed in config/): its ApplicationSet
    deletes the old Application and generates the new one, which adopts the objects. The deletion
    must delete nothing (no resources finalizer) and run no hook (none in dist/)."""
    apps = _generated(sim, sim.state.layout.hub.name)
    old = next((a for a in apps if a.name.endswith("-node-feature-discovery")), None) or min(
        apps, key=lambda a: a.name
    )
    controller = _controller(sim, old)
    new_name = f"{old.name}-renamed"
    sim.state.step = f"day 2: {old.name} renamed to {new_name}"
    owned = sorted(k for k, a in old.cluster.objects.items() if a.owner == old.name)
    expanded = controller.expanded[old.name]
    deletion = controller.remove(old.name)
    del sim.state.apps[old.name]
    if deletion.hooks:
        raise sim.state.blocked(
            old.cluster.name,
            old.name,
            f"its deletion runs {', '.join(deletion.hooks)}: delete hooks destroy what the new app takes over",
        )
    if deletion.deleted:
        raise sim.state.blocked(
            old.cluster.name, old.name,
            f"its deletion deleted {len(deletion.deleted)} objects (resources finalizer) before {new_name} "
            f"could adopt them: {', '.join(show(k) for k in deletion.deleted[:4])}",
        )  # fmt: skip
    renamed = copy.deepcopy(expanded.body)
    renamed["metadata"]["name"] = new_name
    new = type(expanded)(expanded.source, expanded.element_path, renamed)
    controller.add(new, sim.convergence.app_sync(new))
    sim.convergence.settle()
    _converged(sim, new_name)
    adopted = [k for k in owned if k in old.cluster.objects and old.cluster.objects[k].owner == new_name]
    _event(
        sim,
        old.cluster.name,
        f"{old.name} deleted without touching its {len(owned)} objects; {new_name} adopted {len(adopted)}",
    )
    controller.remove(new_name)  # renamed back, as the next commit would
    del sim.state.apps[new_name]
    controller.add(expanded, sim.convergence.app_sync(expanded))
    sim.convergence.settle()
    _converged(sim, old.name)


# --- a failed app ----------------------------------------------------------------------------------


def a_failed_app(sim: Simulation) -> None:
    """A commit breaks one app for good (an object of a kind no app serves) and changes another: the
    broken one stops after its retries, Degraded; the other lands. Nothing else waits on the first."""
    hub = sim.state.layout.hub.name
    apps = sorted(_generated(sim, hub), key=lambda a: (a.wave, a.name))
    broken, other = apps[0], apps[-1]
    bad = {
        "apiVersion": "example.invalid/v1",
        "kind": "Widget",
        "metadata": {"name": "day-2", "namespace": broken.destination_namespace},
    }
    sim.state.step = f"day 2: a commit breaks {broken.name} and changes {other.name}"
    original = list(broken.objects)
    land(
        sim,
        {
            broken.name: [*original, bad],
            other.name: [_labelled(other.objects[-1], "changed"), *other.objects[:-1]],
        },
    )
    if not broken.failed:
        raise sim.state.blocked(
            broken.cluster.name, broken.name, f"neither synced nor failed: {broken.waiting}"
        )
    _converged(sim, other.name)
    _event(
        sim,
        hub,
        f"{broken.name} Degraded after {broken.attempts} attempts ({broken.failures[-1]}); {other.name} synced its change",
    )
    land(sim, {broken.name: original, other.name: [*other.objects[1:], _unlabelled(other.objects[0])]})
    _converged(sim, broken.name, other.name)


def _unlabelled(body: Mapping[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(dict(body))
    (changed["metadata"].get("labels") or {}).pop(CHANGED, None)
    if changed["metadata"].get("labels") == {}:
        del changed["metadata"]["labels"]
    return changed


# --- a spoke in trouble ----------------------------------------------------------------------------


def a_spoke_in_trouble(sim: Simulation) -> None:
    """A spoke not registered (a new cluster before the RUNBOOK registers it, or its cluster Secret
    gone), then unreachable: its sets cannot generate, or its apps are Unknown; a hub change lands
    meanwhile, and the hub's root, which changed nothing, waits on nothing."""
    hub = sim.state.layout.hub.name
    for spoke in sim.state.layout.spokes:
        key = f"argocd/clusters/{spoke.name}"
        for trouble in ("not registered", "unreachable"):
            sim.state.step = f"day 2: {spoke.name} {trouble} while a hub change lands"
            saved = key in sim.state.vault.keys and trouble == "not registered"
            if saved:
                sim.state.vault.keys.discard(key)
            if trouble == "unreachable":
                sim.state.unreachable.add(spoke.name)
            sim.state.clusters[hub].changes += 1
            other = _last(sim, hub)
            original = list(other.objects)
            land(sim, {other.name: [_labelled(original[0], spoke.name), *original[1:]]})
            _converged(sim, other.name)
            spoke_apps = _generated(sim, spoke.name)
            if not spoke_apps or any(a.name not in sim.state.apps for a in spoke_apps):
                raise sim.state.blocked(spoke.name, spoke.name, "its Applications were deleted")
            states = sorted({f"{a.sync_status()}/{a.health()[0]}" for a in spoke_apps})
            sets = sorted({_controller(sim, a).name for a in spoke_apps})
            status, why = _set_health(sim, sets[0])
            _event(
                sim,
                hub,
                f"{other.name} synced; {spoke.name}'s {len(spoke_apps)} apps {', '.join(states)}, kept; {sets[0]}: {status} ({why})",
            )
            if saved:
                sim.state.vault.keys.add(key)
            sim.state.unreachable.discard(spoke.name)
            sim.state.clusters[hub].changes += 1
            land(sim, {other.name: original})
            _converged(sim, *(a.name for a in spoke_apps), other.name)


def _set_health(sim: Simulation, name: str) -> tuple[str, str]:
    """An ApplicationSet's health, as its root's sync waves would see it."""
    hub = sim.state.clusters[sim.state.layout.hub.name]
    found = hub.find("ApplicationSet", sim.state.argocd_namespace, name)
    root = next(r for r in _roots(sim) if name in r.appsets)
    assert found is not None
    return root.object_health(found.body)
