"""The site ApplicationSet (issue 25): it generates every Application past the foundation from the
descriptors synth writes, rolls them out in the root's wave order, and the simulation, `validate` and
`sitegen apps` model it as Argo CD v3.4.4 runs it."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import yaml

from sitegen.check.appsets import applications, dist_files
from sitegen.check.bringup import bringup, from_dist, timeline
from sitegen.check.bringup.day2 import ordered_chart_bump
from sitegen.check.bringup.events import Stop
from sitegen.check.tree import load_tree
from sitegen.model import load_site

from .bringup_cases import ONE, TWO, blocked, edited, installed, run
from .conftest import CONFIG, DIST, invoke_sitegen, run_sitegen, validate

APPSET = "bootstrap/argocd.applicationset.site.yaml"
PARAMS = "apps/ai/argo-cd/argocd.configmap.argocd-cmd-params-cm.yaml"


def _descriptors(variant: str) -> dict[str, dict]:
    return {
        str(p.relative_to(DIST)): json.loads(p.read_text())
        for p in sorted((DIST / variant).glob("apps/*/*/app.json"))
    }


def test_every_app_past_the_foundation_is_generated():
    """The root holds only the foundation's Applications; each other app and cluster is one element."""
    for variant in (ONE, TWO):
        apps, errors = applications(load_tree(DIST), dist_files(DIST))
        assert not errors
        mine = [a for a in apps if a.source.variant == variant]
        generated = {a.name for a in mine if a.source.kind == "ApplicationSet"}
        literal = {a.name for a in mine if a.source.kind == "Application"} - {"root"}
        assert literal == {"ai-namespaces", "ai-cilium", "ai-argo-cd"}
        assert generated == {f"{d['cluster']}-{d['app']}" for d in _descriptors(variant).values()}
        assert "ai-tenant-ai-research" in generated
        for app in mine:
            if app.source.kind == "ApplicationSet":
                assert "automated" not in app.spec["syncPolicy"]  # the rollout syncs
                assert (
                    app.spec["source"]["path"]
                    == f"dist/{variant}/apps/{app.body['metadata']['labels']['sitegen.io/cluster']}/{app.body['metadata']['labels']['sitegen.io/app']}"
                )
    spokes = {d["cluster"] for d in _descriptors(TWO).values()}
    assert spokes == {"ai", "aistor"}


def test_steps_follow_the_waves_and_the_root_waits_for_the_rollout():
    appset = yaml.safe_load_all((DIST / TWO / APPSET).read_text())
    body = next(d for d in appset if d)
    steps = [s["matchExpressions"][0]["values"][0] for s in body["spec"]["strategy"]["rollingSync"]["steps"]]
    assert steps == sorted(steps, key=int) and len(set(steps)) == len(steps)
    assert set(steps) == {d["wave"] for d in _descriptors(TWO).values()}
    root_waves = [
        int(
            yaml.safe_load(p.read_text().split("---", 1)[1])["metadata"]["annotations"][
                "argocd.argoproj.io/sync-wave"
            ]
        )
        for p in (DIST / TWO / "bootstrap").glob("argocd.application.ai-*.yaml")
    ]
    assert int(body["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) > max(root_waves)


def test_progressive_syncs_off(site, inputs, tree):
    """Argo CD then ignores the strategy: the generated apps, without automated sync, never sync."""
    path = tree / ONE / PARAMS
    text = path.read_text()
    assert "enable.progressive.syncs: 'true'" in text
    path.write_text(text.replace("enable.progressive.syncs: 'true'", "enable.progressive.syncs: 'false'"))
    result = validate(tree)
    assert result.exit_code == 1 and "APP-011 progressive-syncs" in result.stdout, result.stdout

    def off(doc):
        doc["data"]["applicationsetcontroller.enable.progressive.syncs"] = "false"

    broken = edited(inputs, ONE, f"{ONE}/{PARAMS}", off)
    blocked(run(site, inputs, ONE, tree=broken), "without automated sync", "progressive syncs off")


def test_a_step_that_selects_no_app(tree):
    path = tree / ONE / APPSET
    text = path.read_text()
    body = yaml.safe_load(text.split("---", 1)[1])
    body["spec"]["strategy"]["rollingSync"]["steps"][1]["matchExpressions"][0]["values"] = ["999"]
    path.write_text(yaml.safe_dump(body))
    result = validate(tree)
    assert "APP-010 rollout-steps" in result.stdout and "selects no generated Application" in result.stdout
    assert "matches no step of the RollingSync" in result.stdout  # the apps it was meant for


def test_a_generated_app_whose_wave_label_is_missing(site, inputs, tree):
    def unlabelled(doc):
        del doc["spec"]["template"]["metadata"]["labels"]["sitegen.io/wave"]

    broken = edited(inputs, ONE, f"{ONE}/{APPSET}", unlabelled)
    blocked(run(site, inputs, ONE, tree=broken), "matches no RollingSync step", "never synced")
    path = tree / ONE / APPSET
    body = yaml.safe_load(path.read_text().split("---", 1)[1])
    unlabelled(body)
    path.write_text(yaml.safe_dump(body))
    assert "matches no step of the RollingSync" in validate(tree).stdout


def test_a_descriptor_without_its_wave(site, inputs):
    texts = dict(inputs[ONE][1])
    where = PurePosixPath(ONE, "apps/ai/kueue/app.json")
    element = json.loads(texts[where])
    del element["wave"]
    texts[where] = json.dumps(element)
    blocked(run(site, inputs, ONE, texts=texts), "missingkey=error", ".wave")


def test_a_spoke_without_its_cluster_secret_labels(site, inputs):
    def unlabelled(doc):
        del doc["spec"]["target"]["template"]["metadata"]["labels"]["argocd.argoproj.io/secret-type"]

    broken = edited(
        inputs, TWO, f"{TWO}/apps/ai/argocd-access/argocd.externalsecret.cluster-aistor", unlabelled
    )
    blocked(run(site, inputs, TWO, tree=broken), "aistor", "argocd.argoproj.io/secret-type=cluster")


def test_an_ordered_chart_bump_applies_in_step_order(site, inputs):
    for variant in (ONE, TWO):
        sim = installed(site, inputs, variant)
        ordered_chart_bump(sim)
        assert "synced in order" in sim.result.timeline[-1].what


def test_the_same_bump_with_the_steps_reversed_fails_naming_the_step(site, inputs):
    sim = installed(site, inputs, TWO)
    try:
        ordered_chart_bump(sim, reverse_steps=True)
    except Stop as stop:
        text = str(stop.blocker)
        assert "RollingSync step" in text and "sync failed before" in text and "serves no" in text, text
    else:
        raise AssertionError("the reversed rollout applied the consumer before the chart")


def test_the_rollout_gates_each_step_on_the_ones_before(site, inputs):
    """An app of an early step that never turns Healthy holds every later step: none of them is
    synced, and the blocker names the step that waits and the app it waits for."""
    sim = installed(site, inputs, ONE)
    rollout = sim.root.rollouts["site"]
    first = min(rollout.apps, key=lambda n: (rollout.step_of[n], n))
    later = [n for n in rollout.apps if rollout.step_of[n] > rollout.step_of[first]]
    for name in [first, *later]:
        rollout.changed(name)
        sim.apps[name].resync(list(sim.apps[name].objects))
    sim.apps[first].failed = True  # its sync gave up
    rollout.advance()
    assert not any(sim.apps[n].triggered for n in later)
    assert f"{first} (RollingSync step 1 of ApplicationSet site) is" in sim.apps[later[0]].waiting
    assert rollout.health()[0] == "Progressing"


def test_apps_expands_the_generated_applications(tmp_path):
    result = invoke_sitegen("apps", "--dist", DIST, "--format", "json")
    assert result.exit_code == 0, result.output
    names = {row["application"] for row in json.loads(result.stdout)}
    assert {"aistor-aistor", "ai-tenant-ai-research"} <= names


THREE = "three-cluster"


def test_a_third_cluster_is_data_only(tmp_path):
    """config/examples/three-cluster adds a GPU cluster as a second spoke with variants.yaml and
    clusters.yaml only: it synthesizes, validates and comes up; the spoke brings elements and its
    cluster Secret, and the root the same three foundation Applications as ever."""
    config = CONFIG / "examples" / THREE
    out = tmp_path / "dist"
    result = run_sitegen("synth", "--config", config, "--variant", THREE, "--out", out)
    assert result.returncode == 0, result.stderr
    checked = invoke_sitegen("validate", "--config", config, "--dist", out)
    assert checked.exit_code == 0, checked.stdout
    assert sorted(p.name for p in (out / THREE / "bootstrap").glob("argocd.application.*")) == [
        "argocd.application.ai-argo-cd.yaml",
        "argocd.application.ai-cilium.yaml",
        "argocd.application.ai-namespaces.yaml",
        "argocd.application.root.yaml",
    ]
    assert {p.parent.parent.name for p in (out / THREE).glob("apps/*/*/app.json")} == {"ai", "gpu", "aistor"}
    secrets = sorted(p.name for p in (out / THREE / "apps/ai/argocd-access").glob("*cluster-*"))
    assert secrets == ["argocd.externalsecret.cluster-aistor.yaml", "argocd.externalsecret.cluster-gpu.yaml"]
    site = load_site(config)
    result = bringup(site, THREE, *from_dist(out, THREE))
    assert result.ok, timeline(result)
    text = timeline(result)
    assert "[gpu] done: 15 nodes Ready" in text and "gpu-tenant-ai-research" in text


def test_an_app_removed_takes_its_objects(site, inputs):
    """Without the controller's resources finalizer (preserveResourcesOnDeletion), removing an app's
    element deletes only the Application: its model server keeps running, unmanaged."""
    result = run(site, inputs, ONE)
    assert any(
        e.step == "day 2: ai-models removed" and "its Application and every object" in e.what
        for e in result.timeline
    )

    def preserve(doc):
        doc["spec"]["syncPolicy"]["preserveResourcesOnDeletion"] = True

    tree = edited(inputs, ONE, f"{ONE}/{APPSET}", preserve)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "day 2: ai-models removed",
        "without its resources finalizer",
        "objects stay",
    )


def test_an_object_removed_needs_the_runbooks_prune(site, inputs):
    """The rollout's syncs do not prune: without the RUNBOOK's prune by hand the app stays OutOfSync and
    its step, with every later one, waits."""
    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "bootstrap", "RUNBOOK.md")
    texts[path] = texts[path].replace("argocd app sync <app> --prune", "argocd app sync <app>")
    blocked(
        run(site, inputs, ONE, texts=texts), "removed from ai-models", "do not prune", "require pruning",
        "says nowhere how to prune",
    )  # fmt: skip


def test_apps_as_json_for_scripts():
    result = invoke_sitegen("apps", "--dist", DIST, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    generated = {r["application"] for r in rows if r["made_by"] == "appset/site"}
    assert {"aistor-aistor", "ai-tenant-ai-research"} <= generated
    assert {r["application"] for r in rows if r["made_by"] == "root"} == {
        "ai-namespaces",
        "ai-cilium",
        "ai-argo-cd",
    }
