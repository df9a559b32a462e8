"""Vendored charts: synth reads only vendor/charts/, checked against charts.lock; a bump is renewed from
a chart source (here a local mirror) by one command that writes archive and lock together."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sitegen.compose.chart_supply import ChartFault, ChartStore, sha256
from sitegen.compose.variant import chart_keys

from .chart_mirror import chart_member, mirror_with
from .conftest import CONFIG, REPO, tree_bytes

# metrics-server stands for any chart: its pin now, and releases the vendored folder does not hold
PINNED = yaml.safe_load((CONFIG / "versions.yaml").read_text())["charts"]["metrics-server"]["version"]
_major, _minor, _patch = map(int, PINNED.split("."))
BUMPED = f"{_major}.{_minor}.{_patch + 1}"
NEXT_MINOR = f"{_major}.{_minor + 1}.0"


@pytest.fixture
def pins(site):
    return {k: site.versions.charts[k] for k in chart_keys(site, list(site.variants))}


@pytest.fixture
def store(tmp_path: Path) -> ChartStore:
    """A copy of the vendored archives and their lock that a test may break or renew."""
    copy = ChartStore(tmp_path / "vendor" / "charts", tmp_path / "charts.lock")
    shutil.copytree(ChartStore().folder, copy.folder)
    shutil.copyfile(ChartStore().lock, copy.lock)
    return copy


def _bumped(pins, version: str = BUMPED):
    return {**pins, "metrics-server": pins["metrics-server"].model_copy(update={"version": version})}


def test_every_rendered_chart_is_vendored_as_locked(pins):
    store = ChartStore()
    archives = store.supply(pins)
    assert set(store.read_lock()) == set(pins)  # no entry for a chart nothing renders
    assert store.strays() == []
    for key, archive in archives.items():
        assert archive.path.parent == REPO / "vendor" / "charts"
        assert yaml.safe_load(chart_member(archive.path, "Chart.yaml"))["version"] == pins[key].version


def test_a_modified_archive_stops_synth(pins, store):
    path = store.path(pins["metrics-server"])
    with path.open("ab") as handle:
        handle.write(b"\0")  # one byte more: a re-packed or tampered archive
    with pytest.raises(
        ChartFault, match=rf"metrics-server-{re.escape(PINNED)}\.tgz: sha256 \w+\.\.\., .*charts\.lock holds"
    ):
        store.supply(pins)


def test_a_missing_archive_is_named(pins, store):
    store.path(pins["cilium"]).unlink()
    with pytest.raises(
        ChartFault, match=rf"{re.escape(store.path(pins['cilium']).name)}: missing, locked for cilium"
    ):
        store.supply(pins)


def test_a_pin_the_lock_does_not_hold_names_the_renew_command(pins, store):
    with pytest.raises(
        ChartFault,
        match=rf"metrics-server: vendors metrics-server {re.escape(PINNED)}, config/versions\.yaml pins "
        rf"metrics-server {re.escape(BUMPED)}; run `sitegen charts --renew metrics-server`",
    ):
        store.supply(_bumped(pins))
    store.write_lock({k: v for k, v in store.read_lock().items() if k != "kueue"})
    with pytest.raises(ChartFault, match=rf"kueue: kueue {re.escape(pins['kueue'].version)} is not vendored"):
        store.supply(pins)


def test_renew_from_a_local_mirror_writes_archive_and_lock_together(pins, store, tmp_path):
    old = store.path(pins["metrics-server"])
    mirror = mirror_with(tmp_path, old, BUMPED)
    bumped = _bumped(pins)
    assert store.outdated(bumped) == ["metrics-server"]
    assert store.renew(bumped, store.outdated(bumped), mirror, None) == ["metrics-server"]
    entry = store.read_lock()["metrics-server"]
    new = store.path(entry)
    assert (entry.version, entry.sha256) == (BUMPED, sha256(new))
    assert entry.origin == f"chart mirror (upstream {pins['metrics-server'].repo})"
    assert new.read_bytes() == (mirror / new.name).read_bytes()
    assert not old.exists()  # the old version goes with its lock entry
    assert store.supply(bumped)["metrics-server"].path == new
    assert store.outdated(bumped) == [] and store.strays() == []


def test_renew_of_a_release_the_mirror_lacks_is_one_line(pins, store, tmp_path):
    mirror = mirror_with(tmp_path, store.path(pins["metrics-server"]), BUMPED)
    before = tree_bytes(store.folder), store.lock.read_bytes()
    with pytest.raises(
        ChartFault,
        match=rf"chart metrics-server {re.escape(NEXT_MINOR)}: not in the mirror .*metrics-server-{re.escape(NEXT_MINOR)}\.tgz",
    ):
        store.renew(_bumped(pins, NEXT_MINOR), ["metrics-server"], mirror, None)
    assert (tree_bytes(store.folder), store.lock.read_bytes()) == before


def test_renew_from_an_unreachable_upstream_is_one_line(pins, store, monkeypatch):
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")  # a closed port, whatever network the machine has
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.raises(ChartFault, match=rf"chart metrics-server {re.escape(BUMPED)}: not found at https://"):
        store.renew(_bumped(pins), ["metrics-server"], None, None)


# --- Renovate's post-upgrade step in a copy of the project, offline ----------------------------------

_PROJECT_PARTS = ("sitegen", "constructs", "imports", "config", "vendor", "charts.lock", "main.py")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The generator's code, config and vendored charts in a folder of their own (node_modules linked)."""
    root = tmp_path / "project"
    for part in _PROJECT_PARTS:
        source = CONFIG if part == "config" else REPO / part
        if source.is_dir():
            shutil.copytree(source, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, root / part)
    (root / "node_modules").symlink_to(REPO / "node_modules")
    return root


def _sitegen(project: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("SITEGEN_CONFIG", "SITEGEN_DIST")},
        "PYTHONPATH": str(project),
        "SITEGEN_CACHE": str(REPO / ".cache"),  # renders are keyed on archive digests: shared safely
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    return subprocess.run(
        [sys.executable, "-c", "from sitegen.cli import main; main()", *map(str, args)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_bump_is_renewed_and_synthesized_offline(project, tmp_path):
    """What Renovate's post-upgrade tasks run on its branch: versions.yaml bumped, then
    `make charts-renew` (here from a local mirror) and `make synth`."""
    versions = project / "config" / "versions.yaml"
    versions.write_text(versions.read_text().replace(f'version: "{PINNED}"', f'version: "{BUMPED}"', 1))
    out = tmp_path / "dist"

    refused = _sitegen(project, "synth", "--variant", "one-cluster", "--out", out)
    assert refused.returncode == 2 and not out.exists()
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"error: charts.lock: metrics-server: vendors metrics-server {PINNED}"), line

    mirror = mirror_with(tmp_path, REPO / "vendor" / "charts" / f"metrics-server-{PINNED}.tgz", BUMPED)
    renewed = _sitegen(project, "charts", "--renew", "--mirror", mirror)
    assert renewed.returncode == 0, renewed.stderr
    assert renewed.stdout.splitlines()[0] == "renewed metrics-server"
    assert (project / "vendor" / "charts" / f"metrics-server-{BUMPED}.tgz").is_file()
    assert _sitegen(project, "charts").returncode == 0

    synth = _sitegen(project, "synth", "--variant", "one-cluster", "--out", out)
    assert synth.returncode == 0, synth.stderr
    (values,) = out.glob("one-cluster/values/*/metrics-server.yaml")
    assert f"chart metrics-server {BUMPED}" in values.read_text().splitlines()[1]


def test_nothing_reads_beside_the_checkout():
    """The two commands and the tests need only the clone: no file of the pipeline names the folder
    beside it (a chart source is an option of `sitegen charts --renew` alone)."""
    beside = "../" + "shared"
    files = [
        REPO / "Makefile",
        REPO / "cdk8s.yaml",
        *(REPO / ".ci").rglob("*"),
        *(REPO / ".github").rglob("*"),
    ]
    files += [*(REPO / "sitegen").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    assert [str(f.relative_to(REPO)) for f in files if f.is_file() and beside in f.read_text()] == []
