"""The synth pipeline: dist/ is current, deterministic, atomic, and the same through the cdk8s CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

import pytest

from sitegen.compose import writer as dist
from sitegen.compose.writer import OutputFile, write_dist

from .conftest import CONFIG, DIST, REPO, SITEGEN, edit_yaml, run_sitegen, tree_bytes


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A synth with an empty cache: every chart rendered again, in this process's time and order."""
    root = tmp_path_factory.mktemp("synth")
    out = root / "dist"
    env = {**os.environ, "SITEGEN_CACHE": str(root / "cache"), "PYTHONHASHSEED": "1"}
    result = subprocess.run(
        [str(SITEGEN), "synth", "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert len(list((root / "cache" / "renders").iterdir())) > 20  # nothing came from an older render
    return out


def test_committed_dist_is_current(fresh):
    """The drift check (run `make synth` and commit dist/ when this fails), and hydration's
    determinism: a chart that generated a password, key or checksum at template time would differ
    from the committed render."""
    assert tree_bytes(fresh) == tree_bytes(DIST)


def test_dist_layout(fresh):
    one = fresh / "one-cluster"
    assert not list(fresh.glob("*/apps/*/*/node.*.yaml"))  # never a Node object
    assert sorted(p.name for p in (fresh / "two-cluster/apps").iterdir()) == ["ai", "aistor"]
    assert (one / "apps/ai/node-labels/node-labeler.cronjob.node-labeler.yaml").is_file()
    assert (fresh / "two-cluster/kubeadm/aistor/init-cmp48.yaml").is_file()


def test_synth_is_byte_identical_across_hash_seeds(tmp_path, fresh):
    """Set iteration order changes with the hash seed; the output must not (`fresh` ran with another)."""
    out = tmp_path / "dist"
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    subprocess.run(
        [str(SITEGEN), "synth", "--out", str(out)], cwd=REPO, env=env, check=True, capture_output=True
    )
    assert tree_bytes(out) == tree_bytes(fresh)


def test_one_variant_replaces_only_its_folder(tmp_path, fresh):
    out = tmp_path / "dist"
    shutil.copytree(fresh, out)
    (out / "two-cluster" / "marker").write_text("kept")
    (out / "one-cluster" / "stale.yaml").write_text("removed")
    assert run_sitegen("synth", "--config", CONFIG, "--variant", "one-cluster", "--out", out).returncode == 0
    assert not (out / "one-cluster" / "stale.yaml").exists()
    assert (out / "two-cluster" / "marker").read_text() == "kept"


def test_failed_write_leaves_the_tree_untouched(tmp_path, fresh, monkeypatch):
    out = tmp_path / "dist"
    shutil.copytree(fresh, out)
    before = tree_bytes(out)
    calls = []
    real_write = Path.write_bytes

    def failing_write(self, data):
        calls.append(self)
        if len(calls) == 3:
            raise OSError("disk full")
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing_write)
    files = [OutputFile(PurePosixPath(f"one-cluster/x{i}.yaml"), [{"i": i}]) for i in range(5)]
    with pytest.raises(OSError, match="disk full"):
        write_dist(files, out, None)
    assert tree_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dist.lock", "dist"]  # no staging folder left


def test_unknown_variant_is_a_config_error(tmp_path):
    result = run_sitegen(
        "synth", "--config", CONFIG, "--variant", "three-cluster", "--out", tmp_path / "dist"
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "variants.yaml" in result.stderr
    assert not (tmp_path / "dist").exists()


def test_cdk8s_cli_synth_gives_the_same_tree(tmp_path, fresh):
    npx = shutil.which("npx")
    if npx is None:
        pytest.fail("npx is missing: Node.js and npm are part of the set-up")
    out = tmp_path / "dist"
    result = subprocess.run(
        [npx, "--no-install", "cdk8s", "synth", "--output", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert tree_bytes(out) == tree_bytes(fresh)
    assert "end-of-life" not in result.stdout + result.stderr


def test_the_swap_is_one_step(tmp_path, monkeypatch):
    """A reader polling during synth finds the old tree or the new one, never no folder: the
    replacement is one rename-exchange, not two renames."""
    out = tmp_path / "dist"
    write_dist([OutputFile(PurePosixPath("one-cluster/a.yaml"), [{"a": 1}])], out, None)
    renamed = []
    real_rename = Path.rename
    monkeypatch.setattr(
        Path, "rename", lambda self, target: renamed.append(self) or real_rename(self, target)
    )
    write_dist([OutputFile(PurePosixPath("one-cluster/a.yaml"), [{"a": 2}])], out, None)
    assert renamed == [] and dist.exchange is not None
    assert "a: 2" in (out / "one-cluster/a.yaml").read_text()


def test_concurrent_synths_into_one_folder_take_turns(tmp_path):
    out = tmp_path / "dist"
    trees = [
        [OutputFile(PurePosixPath(f"one-cluster/f{i}.yaml"), [{"n": n}]) for i in range(40)] for n in range(4)
    ]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda files: write_dist(files, out, None), trees))
    values = {(out / f"one-cluster/f{i}.yaml").read_text().split("n: ")[1] for i in range(40)}
    assert len(values) == 1  # one writer's whole tree, not a mix
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dist.lock", "dist"]


def test_digests_reach_the_objects_and_the_chart_values(config_copy, tmp_path, site):
    digest = "sha256:" + "ab" * 32

    def pin(versions):
        for key in ("curl", "velero"):
            versions["images"][key]["digest"] = digest

    edit_yaml(config_copy, "versions.yaml", pin)
    out = tmp_path / "dist"
    result = run_sitegen("synth", "--config", config_copy, "--variant", "one-cluster", "--out", out)
    assert result.returncode == 0, result.stderr
    text = "\n".join(p.read_text() for p in sorted(out.rglob("*.yaml")))
    assert (
        f"{site.versions.images['curl'].ref}@{digest}" in text
    )  # ours (the Harbor setup Job, the etcd backup)
    velero = (out / "one-cluster/apps/ai/velero/velero.deployment.velero.yaml").read_text()
    assert f"@{digest}" in velero  # through the chart's values (repository, tag)


def test_a_digest_an_operator_cannot_take_is_refused(config_copy, tmp_path):
    def pin(versions):
        versions["images"]["nvidia-driver"]["digest"] = "sha256:" + "ab" * 32

    edit_yaml(config_copy, "versions.yaml", pin)
    result = run_sitegen(
        "synth", "--config", config_copy, "--variant", "one-cluster", "--out", tmp_path / "d"
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error: {config_copy / 'versions.yaml'}: images.nvidia-driver.digest: the GPU Operator"
    )
