"""Delivery that lives through day 2 (issue 36): who owns which field, what a deletion may take, and the
day-2 scenarios of the bring-up, each with the defect that makes it fail put back."""

from __future__ import annotations

import copy
import json
import re

import yaml

from sitegen.check.bringup import delivery_day2 as delivery
from sitegen.check.bringup.events import Stop
from sitegen.compose.ownership import (
    KEEP_ON_DELETE,
    SYNC_OPTIONS,
    finish,
    keep_on_delete_text,
)

from .bringup_cases import ONE, TWO, blocked, edited, installed, run
from .conftest import DIST

WEBHOOK = "apps/ai/aistor-operator/mutatingwebhookconfiguration.object-store-operator-webhook"
TENANT = "apps/ai/tenant-ai-research"
NFD = "apps/ai/node-feature-discovery"


def _yaml_docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# --- what Git owns ---------------------------------------------------------------------------------


def test_no_delete_hook_and_no_empty_ca_bundle_in_dist():
    for path in DIST.glob("*/apps/*/*/*.yaml"):
        text = path.read_text()
        assert "caBundle: ''" not in text, path
        assert not re.search(r"^    (helm\.sh|argocd\.argoproj\.io)/hook: .*(delete|Delete)", text, re.M), (
            path
        )
    for variant in (ONE, TWO):
        assert not list((DIST / variant / NFD).glob("*prune*"))
        assert not list((DIST / variant / "apps/ai/gpu-operator").glob("*cleanup*"))


def test_objects_that_hold_data_are_never_pruned_or_deleted():
    kinds = {
        "CustomResourceDefinition": 0,
        "Namespace": 0,
        "PersistentVolumeClaim": 0,
        "ObjectStore": 0,
        "Cluster": 0,
    }
    for path in DIST.glob(f"{ONE}/apps/*/*/*.yaml"):
        head = path.read_text(errors="replace")[:3000]
        for kind in kinds:
            if f"\nkind: {kind}\n" in head:
                kinds[kind] += 1
                assert f"{SYNC_OPTIONS}: " in head and all(o in head for o in KEEP_ON_DELETE), path
    assert all(n for kind, n in kinds.items() if kind != "PersistentVolumeClaim"), (
        kinds
    )  # no bare claim today


def test_hydration_rules():
    hook = {"kind": "Job", "metadata": {"name": "prune", "annotations": {"helm.sh/hook": "post-delete"}}}
    both = {
        "kind": "Job",
        "metadata": {"name": "x", "annotations": {"helm.sh/hook": "post-install,pre-delete"}},
    }
    argo = {
        "kind": "Job",
        "metadata": {
            "name": "y",
            "annotations": {"argocd.argoproj.io/hook": "PostSync", "helm.sh/hook": "post-delete"},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "a", "annotations": {SYNC_OPTIONS: "ServerSideApply=true"}},
    }
    kept = finish(copy.deepcopy([hook, both, argo, crd]), [])
    assert [d["metadata"]["name"] for d in kept] == ["x", "y", "a"]
    assert kept[0]["metadata"]["annotations"]["helm.sh/hook"] == "post-install"  # never on deletion
    assert kept[1]["metadata"]["annotations"]["helm.sh/hook"] == ""
    assert kept[2]["metadata"]["annotations"][SYNC_OPTIONS] == "ServerSideApply=true,Delete=false,Prune=false"
    text = "---\napiVersion: v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n    a: b\n  name: c\nspec:\n  x: 1\n"
    assert yaml.safe_load(keep_on_delete_text(text))["metadata"]["annotations"] == {
        "a": "b", SYNC_OPTIONS: "Delete=false,Prune=false"}  # fmt: skip
    bare = "---\nkind: CustomResourceDefinition\nmetadata:\n  name: c\nspec: {}\n"
    assert yaml.safe_load(keep_on_delete_text(bare))["metadata"] == {
        "annotations": {SYNC_OPTIONS: "Delete=false,Prune=false"}, "name": "c"}  # fmt: skip


def test_the_acceptance_job_is_kueues_to_unsuspend():
    """Its `suspend: true` matters at creation (Kueue admits it), so Git keeps it and its app ignores it,
    keeping the live value on every sync."""
    for variant in (ONE, TWO):
        element = json.loads((DIST / variant / TENANT / "app.json").read_text())
        assert element["ignoreDifferences"] == [{
            "group": "batch", "kind": "Job", "name": "nccl-allreduce", "namespace": "ai-research",
            "jsonPointers": ["/spec/suspend"],
        }]  # fmt: skip
        assert "RespectIgnoreDifferences=true" in element["syncOptions"]


def test_a_ca_bundle_that_git_owns(site, inputs):
    """The AIStor operator injects its webhook's CA at start: an empty `caBundle` in Git keeps its app
    OutOfSync, and self-heal writes it back over the operator's."""

    def empty(doc):
        for hook in doc["webhooks"]:
            hook["clientConfig"]["caBundle"] = ""

    tree = edited(inputs, ONE, f"{ONE}/{WEBHOOK}", empty)
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-aistor-operator", "MutatingWebhookConfiguration object-store-operator-webhook",
        "aistor-operator writes /webhooks/0/clientConfig/caBundle", "Git owns it",
    )  # fmt: skip


def test_a_suspend_that_git_owns(site, inputs):
    texts = dict(inputs[ONE][1])
    for key, change in (("ignoreDifferences", []), ("syncOptions", None)):
        where = next(p for p in texts if str(p) == f"{ONE}/{TENANT}/app.json")
        element = json.loads(inputs[ONE][1][where])
        if change is None:
            element["syncOptions"].remove("RespectIgnoreDifferences=true")
            needle = "without RespectIgnoreDifferences"
        else:
            element[key] = change
            needle = "Git owns it"
        texts[where] = json.dumps(element)
        blocked(
            run(site, inputs, ONE, texts=texts), "ai-tenant-ai-research", "Kueue writes /spec/suspend", needle
        )
        texts = dict(inputs[ONE][1])


# --- day 2 -----------------------------------------------------------------------------------------


def _timeline(result) -> str:
    return "\n".join(f"{e.step}: {e.what}" for e in result.timeline)


def test_the_day_two_scenarios_pass(site, inputs):
    text = _timeline(run(site, inputs, TWO))
    for needle in (
        "its retry converged once ai-kube-prometheus-stack had synced the CRD",
        "set to Audit by hand: ai-admission-policies healed it (self-heal)",
        "pruned by the app's automated sync",
        "kept (Prune=false)",
        "deleted without touching its 12 objects; ai-node-feature-discovery-renamed adopted 12",
        "ai-admission-policies Degraded after 11 attempts",
        "aistor not registered while a hub change lands: ai-models synced; aistor's 26 apps Unknown/Unknown, kept",
        "aistor unreachable while a hub change lands: ai-models synced",
        "holding nothing: ai-models and every other app converged, the root applied 1 changed object(s)",
    ):
        assert needle in text, needle


def test_a_consumer_refreshed_first_without_retries(site, inputs):
    sim = installed(site, inputs, ONE)
    sim.state.day2 = True
    consumer = sim.state.apps["ai-cert-manager"]
    consumer.retry_limit = 0
    consumer.timed = True
    try:
        delivery.a_chart_bump_refreshed_consumer_first(sim)
    except Stop as stop:
        assert "ai-cert-manager" in str(stop.blocker) and "never converges" in str(stop.blocker)
    else:
        raise AssertionError("a consumer with no retry converged although it synced first")


def test_a_crd_that_a_prune_would_delete(site, inputs):
    """Without Prune=false, a chart bump that drops a CRD deletes it, and every custom resource of its
    kind with it."""

    def prunable(doc):
        if doc.get("kind") == "CustomResourceDefinition":
            doc["metadata"]["annotations"].pop(SYNC_OPTIONS, None)

    tree = edited(inputs, ONE, f"{ONE}/apps/ai/aistor-operator/customresourcedefinition", prunable)
    blocked(run(site, inputs, ONE, tree=tree), "removed from ai-aistor-operator", "pruned")


def test_a_rename_with_the_resources_finalizer(site, inputs):
    def finalized(doc):
        doc["spec"]["syncPolicy"]["preserveResourcesOnDeletion"] = False

    tree = edited(inputs, ONE, f"{ONE}/bootstrap/argocd.applicationset.ai-wave-2", finalized)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "renamed to ai-node-feature-discovery-renamed",
        "its deletion deleted",
    )


def test_a_rename_that_runs_a_delete_hook(site, inputs):
    """NFD's chart ships a post-delete Job that strips every node's feature labels: put back, the
    rename runs it."""
    tree = dict(inputs[ONE][0])
    prune = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "node-feature-discovery-prune", "namespace": "node-feature-discovery",
                     "annotations": {"helm.sh/hook": "post-delete"}},
        "spec": {"template": {"spec": {"containers": [{"name": "prune", "image": "x"}], "restartPolicy": "Never"}}},
    }  # fmt: skip
    from pathlib import PurePosixPath

    tree[PurePosixPath(ONE, NFD, "node-feature-discovery.job.node-feature-discovery-prune.yaml")] = [prune]
    blocked(
        run(site, inputs, ONE, tree=tree),
        "its deletion runs Job node-feature-discovery/node-feature-discovery-prune (post-delete)",
    )


def test_apps_that_do_not_sync_by_themselves(site, inputs):
    """Generated apps without automated sync: a failed app is not what stops the commit, nothing lands."""

    def manual(doc):
        del doc["spec"]["template"]["spec"]["syncPolicy"]["automated"]

    tree = dict(inputs[ONE][0])
    for path in [p for p in tree if p.name.startswith("argocd.applicationset.ai-wave-3")]:
        docs = copy.deepcopy(tree[path])
        for doc in docs:
            manual(doc)
        tree[path] = docs
    blocked(run(site, inputs, ONE, tree=tree), "ai-cert-manager")


def test_gitops_alerts_are_scraped_and_linked(docs):
    """Every Application's sync and health, failed syncs, ApplicationSets that cannot generate,
    ExternalSecrets and certificates: alerts of the hub, each linking the RUNBOOK's section on them,
    on metrics a PodMonitor scrapes (the ports and labels of the rendered pods)."""
    for variant in (ONE, TWO):
        (rule,) = [
            d for d in docs if d.variant == variant and d.kind == "PrometheusRule" and d.name == "site"
        ]
        (group,) = [g for g in rule.body["spec"]["groups"] if g["name"] == "site-gitops"]
        alerts = {r["alert"]: r for r in group["rules"]}
        assert {"ArgoCdAppOutOfSync", "ArgoCdAppUnhealthy", "ArgoCdSyncFailed", "ArgoCdApplicationSetError",
                "ExternalSecretNotReady", "CertificateNotReady", "CertificateExpiresSoon"} <= set(alerts)  # fmt: skip
        runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        assert "### When Argo CD alerts" in runbook
        for name, alert in alerts.items():
            if name.startswith("ArgoCdCluster") or name.endswith("MetricsAbsent"):
                continue
            assert (
                alert["annotations"]["runbook_url"]
                == f"dist/{variant}/bootstrap/RUNBOOK.md#when-argo-cd-alerts"
            )
            assert f"`{name}`" in runbook or name.startswith("Certificate"), name
        monitors = {
            d.name: d for d in docs if d.variant == variant and d.cluster == "ai" and d.kind == "PodMonitor"
        }
        for pod_name, namespace in (
            ("argocd-application-controller", "argocd"),
            ("argocd-applicationset-controller", "argocd"),
            ("external-secrets", "external-secrets"),
        ):
            monitor = monitors[pod_name]
            (workload,) = [
                d for d in docs
                if d.variant == variant and d.cluster == "ai" and d.namespace == namespace
                and d.kind in ("Deployment", "StatefulSet")
                and d.body["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/name") == pod_name
            ]  # fmt: skip
            pod = workload.body["spec"]["template"]
            assert (
                monitor.body["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
            )
            ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
            assert monitor.body["spec"]["podMetricsEndpoints"][0]["port"] in ports


def test_validate_refuses_what_a_deletion_could_take(tree):
    """APP-013: a delete hook back in an app, a set without preserveResourcesOnDeletion, a CRD that a
    prune would delete."""
    job = tree / ONE / NFD / "node-feature-discovery.job.node-feature-discovery-prune.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "node-feature-discovery-prune", "namespace": "node-feature-discovery",
                     "annotations": {"helm.sh/hook": "post-delete"}},
        "spec": {"template": {"spec": {"containers": [{"name": "p", "image": "x"}], "restartPolicy": "Never"}}},
    }))  # fmt: skip
    appset = tree / ONE / "bootstrap/argocd.applicationset.ai-wave-3-storage.yaml"
    body = _yaml_docs(appset)[0]
    body["spec"]["syncPolicy"]["preserveResourcesOnDeletion"] = False
    appset.write_text(yaml.safe_dump(body))
    crd = next((tree / ONE / "apps/ai/kueue").glob("customresourcedefinition.*"))
    crd.write_text(
        crd.read_text().replace(f"{SYNC_OPTIONS}: Delete=false,Prune=false", f"{SYNC_OPTIONS}: Delete=false")
    )
    from .conftest import validate

    out = validate(tree).stdout
    assert out.count("APP-013 deletion-guard") == 3, out
    assert (
        "a delete hook" in out
        and "set preserveResourcesOnDeletion" in out
        and "CustomResourceDefinition without" in out
    )


def test_an_app_dropped_from_dist_needs_an_acknowledgement(config_copy, tmp_path, linked_copy):
    """The dist/ a site runs had an app that config/ no longer makes (a component, tenant or cluster
    removed or renamed): synth refuses, one line naming the field, dist/ untouched, until
    gitops.yaml lists the Application."""

    from .conftest import edit_yaml, run_sitegen

    out = tmp_path / "dist"
    linked_copy(DIST, out)
    legacy = out / ONE / "apps/ai/legacy-app"
    legacy.mkdir()
    (legacy / "legacy.configmap.legacy.yaml").write_text(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n"
    )
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (
        "gitops.yaml: acknowledged_removals" in result.stderr and "one-cluster/ai-legacy-app" in result.stderr
    )
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    edit_yaml(
        config_copy, "gitops.yaml", lambda g: g.update(acknowledged_removals=["one-cluster/ai-legacy-app"])
    )
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    assert not legacy.exists()


def test_a_variant_dropped_from_variants_yaml_needs_an_acknowledgement(config_copy, tmp_path, linked_copy):
    """Put-back: a whole-site synth compared only the variants it still made, so dropping a variant
    from variants.yaml deleted every Application of it (were it the one the site runs) unasked. One
    entry, the variant's name, acknowledges all of them."""

    from .conftest import edit_yaml, run_sitegen

    out = tmp_path / "dist"
    linked_copy(DIST, out)
    edit_yaml(config_copy, "variants.yaml", lambda v: v.pop("two-cluster") and None)
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "gitops.yaml: acknowledged_removals: variant two-cluster would go from dist/" in result.stderr
    assert (out / "two-cluster").is_dir()
    edit_yaml(config_copy, "gitops.yaml", lambda g: g.update(acknowledged_removals=["two-cluster"]))
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    assert not (out / "two-cluster").exists() and (out / ONE).is_dir()
