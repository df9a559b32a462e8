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
    write: the vendored archive, its lock entry and the re-synthesized dist/."""
    config = json.loads((REPO / "renovate.json").read_text())
    (rule,) = [r for r in config["packageRules"] if "postUpgradeTasks" in r]
    assert rule["matchFileNames"] == ["config/versions.yaml"]
    tasks = rule["postUpgradeTasks"]
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    assert tasks["commands"] == ["make charts-renew", "make synth"]
    assert {c.removeprefix("make ") for c in tasks["commands"]} <= targets
    assert set(tasks["fileFilters"]) == {"charts.lock", "vendor/charts/**", "dist/**"}
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
