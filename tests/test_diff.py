"""`sitegen diff`: the rendered change per variant, cluster and app, from two git revisions."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import click
import pytest
import yaml

from sitegen.report.diff import compare, field_changes
from sitegen.report.diff_render import coloured, render_text

from .conftest import CONFIG, SITEGEN, invoke_sitegen

# kueue stands for any chart: its pin now and the next patch release
KUEUE = yaml.safe_load((CONFIG / "versions.yaml").read_text())["images"]["kueue"]["tag"].removeprefix("v")
_major, _minor, _patch = KUEUE.split(".")
KUEUE_NEXT = f"{_major}.{_minor}.{int(_patch) + 1}"

APP = "dist/one-cluster/apps/ai/argo-cd"


def _deployment(replicas: int, image: str = "quay.io/argoproj/argocd:v3.4.1") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "argo-cd-server", "namespace": "argocd"},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "server", "image": image}]}},
        },
    }


def _crd(fields: list[str]) -> dict:
    props = {f: {"type": "string"} for f in fields}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "applications.argoproj.io"},
        "spec": {"versions": [{"name": "v1alpha1", "schema": {"openAPIV3Schema": {"properties": props}}}]},
    }


def _write(repo: Path, rel: str, *docs: dict) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))


def _commit(repo: Path, message: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _write(tmp_path, f"{APP}/argocd.deployment.argo-cd-server.yaml", _deployment(2))
    _write(
        tmp_path,
        f"{APP}/argocd.configmap.old.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old", "namespace": "argocd"}},
    )
    _write(tmp_path, f"{APP}/customresourcedefinition.applications.argoproj.io.yaml", _crd(["a", "b"]))
    _write(tmp_path, "dist/one-cluster/values/ai/argo-cd.yaml", {"server": {"replicas": 2}})
    _commit(tmp_path, "base")
    _write(tmp_path, f"{APP}/argocd.deployment.argo-cd-server.yaml", _deployment(3))
    (tmp_path / APP / "argocd.configmap.old.yaml").unlink()
    _write(
        tmp_path,
        f"{APP}/argocd.configmap.new.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new", "namespace": "argocd"}},
    )
    _write(tmp_path, f"{APP}/customresourcedefinition.applications.argoproj.io.yaml", _crd(["a", "c", "d"]))
    _write(tmp_path, "dist/one-cluster/values/ai/argo-cd.yaml", {"server": {"replicas": 3}})
    _commit(tmp_path, "head")
    return tmp_path


def test_changes_grouped_by_variant_cluster_and_app(repo):
    groups = compare(repo, "HEAD~1", "HEAD")
    by_app = {(g.variant, g.cluster, g.app): g for g in groups}
    app = by_app[("one-cluster", "ai", "argo-cd")]
    assert (app.count("added"), app.count("removed"), app.count("changed")) == (1, 1, 2)
    text = render_text(groups)
    assert "one-cluster ai argo-cd: +1 -1 ~2" in text
    assert "  + ConfigMap argocd/new" in text and "  - ConfigMap argocd/old" in text
    assert "spec.replicas: 2 -> 3" in text
    assert "schema changed: 3 fields" in text  # b went, c and d came: one line, not the schema
    assert "server.replicas: 2 -> 3" in text  # the values file, field by field
    assert text.rstrip().endswith("1 added, 1 removed, 3 changed in 1 app and 1 file")  # argo-cd, its values


def test_working_tree_against_a_revision(repo):
    assert render_text(compare(repo, "HEAD", None)) == "no change in dist/\n"
    _write(
        repo, f"{APP}/argocd.deployment.argo-cd-server.yaml", _deployment(3, "quay.io/argoproj/argocd:v3.4.2")
    )
    text = render_text(compare(repo, "HEAD", None))
    image = 'spec.template.spec.containers[name=server].image: "quay.io/argoproj/argocd:v3.4.1" -> '
    assert image + '"quay.io/argoproj/argocd:v3.4.2"' in text  # containers matched by name, not position


def test_markdown_for_the_job_summary(repo):
    result = subprocess.run(
        [str(SITEGEN), "diff", "HEAD~1", "HEAD", "--format", "markdown"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "| one-cluster | ai | `argo-cd` | 1 | 1 | 2 |" in result.stdout
    assert "<details><summary>one-cluster / ai / argo-cd</summary>" in result.stdout


def test_json_for_scripts(repo):
    result = subprocess.run(
        [str(SITEGEN), "diff", "HEAD~1", "HEAD", "--format", "json"], cwd=repo, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    groups = json.loads(result.stdout)
    argo = next(g for g in groups if g["app"] == "argo-cd")
    assert argo["variants"] == ["one-cluster"] and argo["cluster"] == "ai"
    assert sorted(c["state"] for c in argo["changes"]) == ["added", "changed", "changed", "removed"]
    changed = next(c for c in argo["changes"] if c["state"] == "changed" and c["fields"])
    assert {"path", "old", "new"} == set(changed["fields"][0])


def test_unknown_revision_is_one_line(repo):
    result = subprocess.run([str(SITEGEN), "diff", "nope", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert (
        result.returncode == 2
        and result.stderr.startswith("error: git ls-tree")
        and result.stderr.count("\n") == 1
        and "['" not in result.stderr  # git's words, not a Python list of them
    )


def test_a_diff_run_from_a_subfolder_compares_the_repositorys_dist(repo, monkeypatch):
    """From config/ (or anywhere in the work tree), dist/ is the repository's: not an empty folder
    there, whose diff read as no change."""
    (repo / "config").mkdir()
    monkeypatch.chdir(repo / "config")
    from_config = invoke_sitegen("diff", "HEAD~1", "HEAD")
    monkeypatch.chdir(repo)
    assert (
        from_config.exit_code == 0 and from_config.stdout == invoke_sitegen("diff", "HEAD~1", "HEAD").stdout
    )
    assert "one-cluster ai argo-cd: +1 -1 ~2" in from_config.stdout
    monkeypatch.chdir(repo.parent)
    outside = invoke_sitegen("diff", "HEAD~1", "HEAD")
    assert outside.exit_code == 2 and "not inside a git repository" in outside.output


def test_an_inserted_list_item_is_one_change():
    old = {"kinds": [{"kind": "A"}, {"kind": "C"}, {"kind": "D"}]}
    new = {"kinds": [{"kind": "A"}, {"kind": "B"}, {"kind": "C"}, {"kind": "D"}]}
    ((path, _before, after),) = field_changes(old, new)
    assert path == "kinds[+]" and after == {"kind": "B"}


# --- on the real site: two temporary commits of dist/ ----------------------------------------------


@pytest.fixture
def site_repo(tmp_path: Path, linked_copy) -> Path:
    """A scratch repository whose first commit is the committed dist/."""

    from .conftest import DIST

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    linked_copy(DIST, tmp_path / "dist")
    _commit(tmp_path, "site")
    return tmp_path


def test_a_gpu_pool_resize_shows_where_it_lands(site_repo, config_copy):
    from .config_mutations import append, both, set_value

    both(
        set_value("pools.yaml", "gpu", "count", value=13),
        append("pools.yaml", "gpu", "hosts", value={"name": "gpu13", "address": "10.20.1.113"}),
    )(config_copy)
    result = subprocess.run(
        [str(SITEGEN), "synth", "--config", str(config_copy), "--out", str(site_repo / "dist")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    _commit(site_repo, "thirteen GPU nodes")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    # the same change in both variants is listed once, naming both
    assert "one-cluster, two-cluster ai gpu-queues: +0 -0 ~1" in text
    assert (
        text.count("resources[name=nvidia.com/gpu].nominalQuota: 96 -> 104") == 1
    )  # eight more GPUs, computed
    assert "one-cluster, two-cluster ai node-labels: +0 -0 ~1" in text  # one more host to label, one line
    assert 'data.nodes.txt (line): - -> "gpu13 ' in text
    assert "two-cluster ai gpu-queues" in text and "two-cluster aistor" not in text


def test_a_chart_bump_shows_the_objects_it_changes(site_repo):
    app = site_repo / "dist/one-cluster/apps/ai/kueue"
    deployment = app / "kueue-system.deployment.kueue-controller-manager.yaml"
    deployment.write_text(deployment.read_text().replace(f"v{KUEUE}", f"v{KUEUE_NEXT}"))
    (crd,) = app.glob("customresourcedefinition.clusterqueues.*.yaml")
    crd.write_text(crd.read_text().replace("preemption:", "preemptionPolicy:"))
    _commit(site_repo, f"kueue {KUEUE_NEXT}")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert text.startswith("one-cluster ai kueue: +0 -0 ~2")
    assert "~ Deployment kueue-system/kueue-controller-manager" in text
    assert (
        f'.image: "registry.k8s.io/kueue/kueue:v{KUEUE}" -> "registry.k8s.io/kueue/kueue:v{KUEUE_NEXT}"'
        in text
    )
    assert "~ CustomResourceDefinition clusterqueues.kueue.x-k8s.io" in text and "schema changed:" in text


def test_generated_applications_are_compared_where_they_sync(site_repo):
    """An element's change and a template change both show as the generated Applications that change,
    each in the group of its cluster and app; the element file itself is not listed."""
    element = site_repo / "dist/two-cluster/apps/aistor/velero/app.json"
    element.write_text(
        element.read_text().replace('"ServerSideApply=true"', '"ServerSideApply=true", "Replace=true"')
    )
    _commit(site_repo, "velero replaces")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert "two-cluster aistor velero: +0 -0 ~1" in text, text
    assert "~ Application argocd/aistor-velero (generated)" in text
    assert "spec.syncPolicy.syncOptions" in text and "app.json" not in text
    appset = site_repo / "dist/one-cluster/bootstrap/argocd.applicationset.ai-wave-2-storage.yaml"
    appset.write_text(appset.read_text().replace("duration: 10s", "duration: 20s"))
    _commit(site_repo, "slower retries")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert "one-cluster ai cloudnative-pg: +0 -0 ~1" in text and "one-cluster ai topolvm: +0 -0 ~1" in text
    assert "kueue" not in text and "two-cluster" not in text


def test_a_removed_or_renamed_app_says_what_its_deletion_does(site_repo):
    """Deleting an Application leaves its objects (no resources finalizer): a removed app's run on,
    unmanaged, a renamed app's are adopted by the new one."""
    import shutil

    apps = site_repo / "dist/one-cluster/apps/ai"
    shutil.rmtree(apps / "models")
    shutil.move(apps / "grafana", apps / "dashboards")
    element = apps / "dashboards/app.json"
    element.write_text(element.read_text().replace('"app": "grafana"', '"app": "dashboards"'))
    for appset in (site_repo / "dist/one-cluster/bootstrap").glob("argocd.applicationset.*.yaml"):
        text = appset.read_text().replace("/apps/ai/grafana/app.json", "/apps/ai/dashboards/app.json")
        appset.write_text("".join(line for line in text.splitlines(True) if "/apps/ai/models/" not in line))
    _commit(site_repo, "models gone, grafana renamed")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert "- Application argocd/ai-models (generated): its ApplicationSet deletes it and leaves its" in text
    assert "objects running, unmanaged" in text and "delete them by hand" in text
    assert "- Application argocd/ai-grafana (generated): its ApplicationSet deletes it, leaving its" in text
    assert "to dashboards, which adopts them" in text


def test_a_config_change_not_yet_synthesized_is_not_no_change(tmp_path, linked_copy):
    """dist/INPUTS holds the fingerprint of what synth read: a working tree whose config/ changed since
    is refused (exit 2), not reported as "no change"."""
    import shutil

    from .conftest import CONFIG, DIST

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copytree(CONFIG, tmp_path / "config")
    linked_copy(DIST, tmp_path / "dist")
    _commit(tmp_path, "site")
    current = subprocess.run([str(SITEGEN), "diff", "HEAD"], cwd=tmp_path, capture_output=True, text=True)
    assert current.returncode == 0, current.stderr
    tenants = tmp_path / "config/tenants.yaml"
    tenants.write_text(tenants.read_text().replace("storage_gb: 4000", "storage_gb: 5000"))
    stale = subprocess.run([str(SITEGEN), "diff", "HEAD"], cwd=tmp_path, capture_output=True, text=True)
    assert stale.returncode == 2 and "dist/ is stale" in stale.stderr and "make synth" in stale.stderr


def test_long_values_that_share_their_start_print_where_they_differ():
    """The CSR approver's host regex grows by one host at its end: old and new must not print alike."""
    from sitegen.report.diff import Change, State
    from sitegen.report.diff_render import _field_lines

    hosts = "|".join(f"cmp{i:02d}" for i in range(1, 51))
    old, new = f"^({hosts})$", f"^({hosts}|cmp51)$"
    (line,) = _field_lines(Change("Deployment x/y", State.CHANGED, field_changes({"r": old}, {"r": new})))
    before, after = line.removeprefix("r: ").split(" -> ")
    assert before != after and "cmp51" in after and "cmp51" not in before


def test_a_chart_bumps_label_lines_are_said_once(site_repo):
    """Every object of a bumped chart changes its helm.sh/chart label the same way: one line for the
    app, not one per object, so the objects' real changes stay visible."""
    app = site_repo / "dist/one-cluster/apps/ai/kueue"
    for path in app.glob("*.yaml"):
        path.write_text(
            path.read_text().replace(f"helm.sh/chart: kueue-{KUEUE}", f"helm.sh/chart: kueue-{KUEUE_NEXT}")
        )
    _commit(site_repo, f"kueue {KUEUE_NEXT} labels")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    said = [line for line in text.splitlines() if "helm.sh/chart" in line]
    assert (
        len(said) == 1
        and said[0].startswith("  ~ in ")
        and f'"kueue-{KUEUE}" -> "kueue-{KUEUE_NEXT}"' in said[0]
    ), said


def test_an_added_object_shows_what_it_holds(site_repo):
    """A new tenant's quota: the reviewer reads its GPUs, not just its name."""
    quota = {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": "vision"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "32", "requests.cpu": "512"}},
    }  # fmt: skip
    _write(site_repo, "dist/one-cluster/apps/ai/namespaces/vision.resourcequota.quota.yaml", quota)
    _commit(site_repo, "a new tenant")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert "+ ResourceQuota vision/quota" in text
    assert 'spec.hard.requests.nvidia.com/gpu: "32"' in text and "metadata.name" not in text
    assert " -> " not in text.split("+ ResourceQuota vision/quota")[1]  # an object, not changes


def test_added_objects_read_as_objects_not_as_shared_changes(site_repo):
    """Put-back (the users' review, 2.1): nine new CronJobs' shared fields came first as about 100
    lines of `~ in 9 objects: spec.concurrencyPolicy: - -> "Forbid"`. Each added object is now its
    kind and name with the few fields that matter (image, schedule, ...), then how many more."""
    for i in range(4):
        job = {
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"check-{i}", "namespace": "ops"},
            "spec": {"schedule": f"{i} 3 * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.37",
                                                                   "args": ["a", "b"], "env": [{"name": "X", "value": "1"}]}]}}}},
                     "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3, "suspend": False},
        }  # fmt: skip
        _write(site_repo, f"dist/one-cluster/apps/ai/ops/ops.cronjob.check-{i}.yaml", job)
    _commit(site_repo, "four checks")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert "in 4 objects" not in text
    block = text.split("+ CronJob ops/check-0")[1].split("+ CronJob ops/check-1")[0]
    assert 'spec.schedule: "0 3 * * *"' in block and '.image: "busybox:1.37"' in block
    assert "... and" in block and " -> " not in block


def test_a_runbook_change_shows_its_lines(site_repo):
    """A text file's change shows the lines that went and came, not a bare file name."""
    runbook = site_repo / "dist/one-cluster/bootstrap/RUNBOOK.md"
    runbook.write_text(runbook.read_text() + "One more line.\n")
    _commit(site_repo, "runbook")
    text = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    assert (
        "~ bootstrap/RUNBOOK.md\n      § The database `harbor-db` on `ai`: a restore:\n"
        "        + One more line."
    ) in text, text


def test_a_runbook_section_that_comes_shows_whole_and_renumbered_steps_stay_quiet(site_repo):
    """A section added before the numbered steps shifts every number after it: the reviewer reads the new
    section's lines, and of each later step only its heading line."""
    runbook = site_repo / "dist/one-cluster/bootstrap/RUNBOOK.md"
    text = runbook.read_text()
    steps = re.findall(r"^### (\d+)\. ", text, flags=re.M)
    body = "\n".join(f"line {i} of the new section" for i in range(30))
    shifted = re.sub(r"^### (\d+)\. ", lambda m: f"### {int(m.group(1)) + 1}. ", text, flags=re.M)
    runbook.write_text(shifted.replace("### 2. ", f"### 1. A new first step\n\n{body}\n\n### 2. ", 1))
    _commit(site_repo, "runbook")
    shown = render_text(compare(site_repo, "HEAD~1", "HEAD"))
    new = shown[shown.index("§ A new first step:") :].split("\n      §")[0]
    assert all(f"\n        + line {i} of the new section" in new for i in range(30)), shown
    assert "more lines" not in shown
    changed = [line for line in shown.splitlines() if line.startswith(("        + ", "        - "))]
    others = [line for line in changed if line.removeprefix("        ")[2:] not in new]
    assert len(others) == 2 * len(steps), others  # each old step's heading went and came, nothing else
    assert all(re.match(r"        [-+] ### \d+\. ", line) for line in others), others


def test_a_terminal_gets_colour_and_the_text_stays_the_same():
    text = "one-cluster ai kueue: +1 -1 ~1\n  + ConfigMap a/b\n  - ConfigMap a/c\n  ~ Deployment a/d\n    .x: 1 -> 2\n"
    shown = coloured(text)
    assert click.unstyle(shown) == text
    lines = shown.splitlines()
    assert lines[0].startswith("\x1b[1m")  # the app heading bold
    assert [line[:5] for line in lines[1:4]] == ["\x1b[32m", "\x1b[31m", "\x1b[33m"]
    assert lines[4] == "    .x: 1 -> 2"  # field lines keep the terminal's colour


def test_a_commit_whose_dist_is_stale_is_refused(tmp_path, linked_copy):
    """Put-back: `sitegen diff A B` read each commit's dist/ as it was, so a commit that changed config/
    without `make synth` diffed as "No change" (what the PR comment runs). Each commit's dist/INPUTS is
    now checked against the digest of that commit's own tracked inputs: exit 2, naming the commit."""
    import shutil

    from .conftest import CONFIG, DIST, REPO

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copytree(CONFIG, tmp_path / "config")
    linked_copy(DIST, tmp_path / "dist")
    for folder in ("sitegen", "constructs", "imports", "vendor/charts"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("main.py", "charts.lock", "requirements.lock", "package-lock.json", "cdk8s.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    _commit(tmp_path, "site, synthesized")
    fresh = subprocess.run(
        [str(SITEGEN), "diff", "HEAD", "HEAD"], cwd=tmp_path, capture_output=True, text=True
    )
    assert fresh.returncode == 0, fresh.stderr
    tenants = tmp_path / "config/tenants.yaml"
    tenants.write_text(tenants.read_text().replace("storage_gb: 4000", "storage_gb: 5000"))
    _commit(tmp_path, "a tenant grows, dist/ left behind")
    stale = subprocess.run(
        [str(SITEGEN), "diff", "HEAD~1", "HEAD"], cwd=tmp_path, capture_output=True, text=True
    )
    assert stale.returncode == 2, stale.stdout
    assert "dist/ of HEAD is stale" in stale.stderr and "make synth" in stale.stderr
    # a base that is stale misleads as much as a head
    back = subprocess.run(
        [str(SITEGEN), "diff", "HEAD", "HEAD~1"], cwd=tmp_path, capture_output=True, text=True
    )
    assert back.returncode == 2 and "dist/ of HEAD is stale" in back.stderr


def test_a_comment_too_long_ends_at_a_fold_and_says_where_the_rest_is(repo):
    """Put-back: the pull request comment was the markdown cut at 60,000 bytes (`head -c`), mid-block.
    Within --max-bytes it ends after a whole row or fold and names what it left out and where."""
    from sitegen.report.diff_render import render_markdown

    groups = compare(repo, "HEAD~1", "HEAD")
    whole = render_markdown(groups)
    assert "do not fit" not in whole
    first_fold = whole.index("<details>")
    cut = render_markdown(groups, limit=first_fold + 400 + 10, more="the job summary")
    assert cut.count("<details>") == cut.count("</details>") == 0
    assert cut.count("```") % 2 == 0
    assert cut.rstrip().endswith("_the changes of 2 more apps do not fit here: see the job summary._")
    tiny = render_markdown(groups, limit=len(whole.splitlines()[0]) + 500)
    assert "| one-cluster | ai | `argo-cd` |" not in tiny
    assert tiny.rstrip().endswith("_2 more apps, and the changes of every app, do not fit here._")
    result = subprocess.run(
        [str(SITEGEN), "diff", "HEAD~1", "HEAD", "--format", "markdown", "--max-bytes", "100000"],
        cwd=repo, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout == whole


def test_a_header_only_host_list_is_shown_and_the_inputs_fingerprint_is_not(tmp_path):
    """Put-back (the users' review, 2.1): a kubeadm join file whose only change was its header, the
    NODE=IP list an operator types for the new hosts, was left out; dist/INPUTS headed every diff."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    join = tmp_path / "dist/one-cluster/kubeadm/ai/join-gpu.yaml"
    join.parent.mkdir(parents=True)
    body = yaml.safe_dump({"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "JoinConfiguration"})
    banner = "# Generated by sitegen from config/ (make synth). Do not edit: change config/ or constructs/.\n"
    join.write_text(f"{banner}# hosts: gpu01=10.20.1.101 gpu02=10.20.1.102\n{body}")
    (tmp_path / "dist/INPUTS").write_text("v1-aaaa\n")
    _commit(tmp_path, "base")
    join.write_text(f"{banner}# hosts: gpu01=10.20.1.101 gpu02=10.20.1.102 gpu03=10.20.1.103\n{body}")
    (tmp_path / "dist/INPUTS").write_text("v1-bbbb\n")
    _commit(tmp_path, "a third GPU host")
    text = render_text(compare(tmp_path, "HEAD~1", "HEAD"))
    assert "gpu03=10.20.1.103" in text
    assert "INPUTS" not in text and "Generated by sitegen" not in text


def test_a_field_changed_alike_in_several_objects_is_said_once_with_its_values():
    """A chart bump changes the same labels in every object of its app: one line at the top holds the
    change with both values as they are (a mapping, a field that came), and each object lists the rest."""
    from sitegen.report.diff import MISSING, Change, FieldChange, Group, State
    from sitegen.report.diff_render import render_text

    bump = [
        FieldChange("metadata.labels.helm.sh/chart", "loki-6.1.0", "loki-6.2.0"),
        FieldChange("spec.template.spec.securityContext", MISSING, {"runAsNonRoot": True, "fsGroup": 10001}),
    ]
    group = Group("one-cluster", "ai", "loki")
    for name in ("read", "write", "backend"):
        own = [FieldChange("spec.replicas", 2, 3)] if name == "write" else []
        group.changes.append(Change(f"StatefulSet logs/loki-{name}", State.CHANGED, [*bump, *own]))
    lines = render_text([group]).splitlines()
    assert lines[1:3] == [
        '  ~ in 3 objects: metadata.labels.helm.sh/chart: "loki-6.1.0" -> "loki-6.2.0"',
        '  ~ in 3 objects: spec.template.spec.securityContext: - -> {"fsGroup": 10001, "runAsNonRoot": true}',
    ]
    assert "      spec.replicas: 2 -> 3" in lines
    assert sum("helm.sh/chart" in line for line in lines) == 1
