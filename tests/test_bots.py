"""The bots' and hooks' configuration: Renovate's custom managers find every pin of config/versions.yaml
(checked with the same regexes, translated from Renovate's named groups; its schema is not available
offline), its post-upgrade step, and the pre-commit hooks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import CONFIG, REPO


def _managers() -> list[dict]:
    return json.loads((REPO / "renovate.json").read_text())["customManagers"]


def _matches(manager: dict, text: str) -> list[dict[str, str]]:
    out = []
    for pattern in manager["matchStrings"]:
        # Renovate (RE2) writes named groups `(?<name>...)`, Python `(?P<name>...)`; the rest agrees.
        out += [m.groupdict() for m in re.finditer(pattern.replace("(?<", "(?P<"), text)]
    return out


def test_every_chart_and_image_pin_is_found_once(site):
    text = (CONFIG / "versions.yaml").read_text()
    managers = {m["description"]: m for m in _managers()}
    http = _matches(managers["Helm charts from HTTP repositories"], text)
    oci = _matches(managers["Helm charts from OCI registries"], text)
    images = _matches(managers["Container images"], text)
    (kubernetes,) = _matches(
        managers["Kubernetes itself (kubeadm, kubelet, schemas): minor bumps reviewed by hand"], text
    )

    expected_http = {(p.chart, p.repo, p.version) for p in site.versions.charts.values() if not p.is_oci}
    assert {(m["depName"], m["registryUrl"], m["currentValue"]) for m in http} == expected_http
    expected_oci = {
        (p.chart, p.repo.removeprefix("oci://"), p.version) for p in site.versions.charts.values() if p.is_oci
    }
    assert {(m["chart"], m["registry"], m["currentValue"]) for m in oci} == expected_oci
    assert len(http) + len(oci) == len(site.versions.charts)
    assert {(m["depName"], m["currentValue"]) for m in images} == {
        (i.repository, i.tag) for i in site.versions.images.values()
    }
    assert kubernetes["currentValue"] == site.versions.kubernetes


def test_a_version_bump_carries_its_archive_lock_and_dist():
    """Renovate's post-upgrade tasks run Makefile targets that exist, and commit every path they
    write: the vendored archive, its lock entry, the re-synthesized dist/ and docs blocks."""
    config = json.loads((REPO / "renovate.json").read_text())
    (rule,) = [r for r in config["packageRules"] if "postUpgradeTasks" in r and "matchFileNames" in r]
    assert rule["matchFileNames"] == ["config/versions.yaml"]
    tasks = rule["postUpgradeTasks"]
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    assert tasks["commands"] == ["make charts-renew", "make synth"]
    assert {c.removeprefix("make ") for c in tasks["commands"]} <= targets
    assert set(tasks["fileFilters"]) == {"charts.lock", "vendor/charts/**", "dist/**", "docs/**"}
    assert tasks["executionMode"] == "branch"  # once per branch, after every bump of a group


def test_the_pre_commit_config_is_valid_and_leaves_generated_code_alone():
    """`pre-commit install` works (the config validates), and its formatters never rewrite imports/
    or dist/ (what cdk8s import and synth generate)."""
    pre_commit = Path(sys.executable).parent / "pre-commit"
    result = subprocess.run(
        [str(pre_commit), "validate-config", ".pre-commit-config.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    hooks = {
        h["id"]: h
        for r in yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"]
        for h in r["hooks"]
    }
    for name in ("ruff", "ruff-format"):
        exclude = re.compile(hooks[name]["exclude"])
        assert exclude.search("imports/io/x_k8s/kueue/__init__.py") and exclude.search(
            "dist/one-cluster/a.yaml"
        )
        assert not exclude.search("sitegen/cli.py")
        assert "--force-exclude" in hooks[name]["entry"]  # ruff's own excludes hold for named files too
    drift = re.compile(hooks["dist-drift"]["files"])
    assert all(
        drift.search(p) for p in ("config/site.yaml", "vendor/charts/x.tgz", "charts.lock", "imports/a.py")
    )


# The first major of each action that runs on Node 24 (GitHub retires the Node 20 runtime).
NODE24 = {"actions/checkout": 5, "actions/setup-python": 6, "actions/setup-node": 5, "actions/cache": 5}


def test_the_workflow_runs_on_node24_actions_and_edits_only_its_own_comment():
    """Each action pinned to a commit (a moved tag cannot change what runs), with its version beside
    it for Renovate and the reader; the job ends at a timeout, and a newer push cancels a PR's run."""
    text = (REPO / ".github/workflows/ci.yaml").read_text()
    workflow = yaml.safe_load(text)
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    used = [s["uses"] for s in steps if "uses" in s]
    pinned = dict(re.findall(r"uses: (\S+@[0-9a-f]{40})  # v(\d+)\.\d+\.\d+$", text, re.M))
    assert used and sorted(pinned) == sorted(set(used))
    for ref, major in pinned.items():
        action = ref.partition("@")[0]
        assert action in NODE24 and int(major) >= NODE24[action], ref
    assert all(job.get("timeout-minutes") for job in workflow["jobs"].values())
    assert workflow["concurrency"]["cancel-in-progress"]
    scripts = "\n".join(s.get("run", "") for s in steps)
    assert "--edit-last" not in scripts  # it edits the last comment of the bot, whoever wrote it
    assert "<!-- sitegen: rendered changes -->" in scripts


def test_a_restored_install_is_not_reinstalled(tmp_path):
    """make's stamps are named after the locks' digest: an install restored from a cache (older than
    the freshly checked-out locks) is current; a changed lock makes a new stamp name."""
    dry = subprocess.run(["make", "-n", "synth"], cwd=REPO, capture_output=True, text=True, check=True)
    assert "installing" not in dry.stdout, dry.stdout  # the stamps of this checkout are in place
    for lock in ("requirements.lock", "pyproject.toml", "package-lock.json"):
        (REPO / lock).touch()  # as a checkout after a cache restore leaves them: newer than the stamps
    dry = subprocess.run(["make", "-n", "synth"], cwd=REPO, capture_output=True, text=True, check=True)
    assert "installing" not in dry.stdout, dry.stdout
    names = subprocess.run(
        ["make", "-n", "-p", "synth"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"^PY_STAMP := \.venv/\.installed-[0-9a-f]{16}$", names, re.M)


DOCKER_VERSION = re.compile(r"^v?\d+(\.\d+){0,3}(-[\w.]+)?$")  # what Renovate's docker versioning orders


def test_every_image_tag_has_a_versioning_renovate_can_order(site):
    """A tag docker versioning cannot order (MinIO's RELEASE dates, the Network Operator's prefixed
    tags, DOCA and DCGM builds) gets a regex versioning of its own that parses it; otherwise Renovate
    never proposes its bump."""
    from fnmatch import fnmatchcase

    rules = json.loads((REPO / "renovate.json").read_text())["packageRules"]
    for key, image in site.versions.images.items():
        versioning = None
        for rule in rules:  # later rules win, as in Renovate
            names = rule.get("matchPackageNames") or []
            if "versioning" in rule and any(
                fnmatchcase(image.repository, n.replace("**", "*")) for n in names
            ):
                versioning = rule["versioning"]
        if versioning is None:
            assert DOCKER_VERSION.match(image.tag), f"{key}: {image.tag} needs a regex versioning"
            continue
        pattern = versioning.removeprefix("regex:").replace("(?<", "(?P<")
        assert re.match(pattern, image.tag), f"{key}: {versioning} does not parse {image.tag}"


def test_a_python_bump_renews_the_hashed_locks():
    rules = json.loads((REPO / "renovate.json").read_text())["packageRules"]
    (rule,) = [r for r in rules if "pep621" in (r.get("matchManagers") or []) and "postUpgradeTasks" in r]
    assert rule["postUpgradeTasks"]["commands"] == ["make lock"]
    assert "requirements.lock" in rule["postUpgradeTasks"]["fileFilters"]
    assert "--no-emit-index-url" in (REPO / "Makefile").read_text()  # the lock never names an index


DIGEST = "sha256:" + "ab" * 32


def _render_template(template: str, values: dict[str, str]) -> str:
    """Renovate's handlebars, as far as the image template uses it: {{{x}}} and {{#if x}}..{{/if}}."""
    text = re.sub(
        r"\{\{#if (\w+)\}\}(.*?)\{\{/if\}\}",
        lambda m: m.group(2) if values.get(m.group(1)) else "",
        template,
        flags=re.S,
    )
    return re.sub(r"\{\{\{(\w+)\}\}\}", lambda m: values[m.group(1)], text)


def test_images_get_a_digest_beside_the_tag_and_keep_it(site):
    """pinDigests on every image Renovate can resolve: the digest is written under the tag (the model
    reads it, test_digests_reach_the_objects), found again on the next run, and replaced with the tag."""
    managers = {m["description"]: m for m in _managers()}
    images = managers["Container images"]
    text = (CONFIG / "versions.yaml").read_text()
    tag = site.versions.images["curl"].tag
    pinned = text.replace(f'tag: "{tag}"\n', f'tag: "{tag}"\n    digest: "{DIGEST}"\n', 1)
    curl = next(m for m in _matches(images, pinned) if m["depName"] == "curlimages/curl")
    assert curl["currentDigest"] == DIGEST and curl["currentValue"] == tag
    bumped = _render_template(
        images["autoReplaceStringTemplate"],
        {"depName": "curlimages/curl", "newValue": "8.18.0", "newDigest": "sha256:" + "cd" * 32},
    )
    assert bumped == f'\n    repository: curlimages/curl\n    tag: "8.18.0"\n    digest: "sha256:{"cd" * 32}"'
    assert images["depTypeTemplate"] == "image"
    rules = json.loads((REPO / "renovate.json").read_text())["packageRules"]
    pin = [r for r in rules if r.get("matchDepTypes") == ["image"] and r.get("pinDigests") is True]
    unpin = [r for r in rules if r.get("matchDepTypes") == ["image"] and r.get("pinDigests") is False]
    assert len(pin) == 1 and len(unpin) == 1
    excluded = unpin[0]["matchPackageNames"]
    assert "nvcr.io/nvidia/driver" in excluded  # the GPU Operator appends the OS to the tag
    mellanox = next(p for p in excluded if p.startswith("/")).strip("/")
    operands = [i.repository for k, i in site.versions.images.items() if k.startswith("network-operator-")]
    assert operands and all(re.match(mellanox.replace("\\/", "/"), r) for r in operands)
    assert "docs/**" in rules[0]["postUpgradeTasks"]["fileFilters"]  # make synth rewrites docs blocks
