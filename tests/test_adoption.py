"""A site owner's changes, each made on a copy of the repository through the documented workflow (edit
config/, `make synth`, then `make site` or `make test`): the generator's tests must not care what
config/ holds, and the site's checks must judge the new site, not the seed's figures.

Slow (a repository copy and a synth each): `make adoption` runs them, CI too; `make test` leaves them
out (some run it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from .chart_mirror import mirror_with
from .conftest import PINS, REPO

pytestmark = pytest.mark.adoption

# What a repository copy links instead of copying: installed tools, and caches that are keyed on content.
_LINKED = (".venv", ".venv-scan", ".venv-ansible", "node_modules")
_SKIPPED = {*_LINKED, ".git", ".cache", "__pycache__", ".pytest_cache", ".ruff_cache"}
PINNED_METRICS_SERVER = PINS["charts"]["metrics-server"]["version"]
_major, _minor, _patch = PINNED_METRICS_SERVER.split(".")
BUMPED_METRICS_SERVER = f"{_major}.{_minor}.{int(_patch) + 1}"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The repository as a site owner's clone holds it: its files, the installed tools linked."""
    root = tmp_path / "site"
    shutil.copytree(
        REPO, root, symlinks=True, ignore=lambda folder, names: [n for n in names if n in _SKIPPED]
    )
    for name in _LINKED:
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _env(copy: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SITEGEN_", "PYTEST_"))}
    env["PYTHONPATH"] = str(copy)  # the copy's generator, ahead of the editable install of REPO's
    env["SITEGEN_CACHE"] = str(REPO / ".cache")  # keyed on content: shared safely, and warm
    return env


def make(copy: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *targets], cwd=copy, env=_env(copy), capture_output=True, text=True
    )


def acknowledge_moves(copy: Path, expected: int) -> None:
    """What a site owner does when synth refuses a move: read the entries synth prints and list them
    in gitops.yaml (compose/live_addresses.py)."""
    shown = subprocess.run(
        [str(copy / ".venv" / "bin" / "sitegen"), "synth", "--show-moves"],
        cwd=copy, env=_env(copy), capture_output=True, text=True, check=True,
    )  # fmt: skip
    entries = [line.strip()[3:-1] for line in shown.stdout.splitlines() if line.startswith("  - ")]
    assert len(entries) == expected, shown.stdout
    edit(copy, "gitops.yaml", lambda g: g.update(acknowledged_moves=entries))


def edit(copy: Path, file: str, change: Callable[[dict], None]) -> None:
    path = copy / "config" / file
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def grow_pool(copy: Path, pool: str, prefix: str, count: int) -> None:
    def change(pools: dict) -> None:
        (hosts,) = pools[pool]["hosts"]  # the seed numbers each pool as one range
        width = len(re.search(r"\{(\d+)\.\.", hosts["names"]).group(1))
        pools[pool]["count"] = count
        hosts["names"] = f"{prefix}{{{1:0{width}d}..{count:0{width}d}}}"

    edit(copy, "pools.yaml", change)


def more_gpu_nodes(copy: Path) -> None:
    grow_pool(copy, "gpu", "gpu", 16)


def a_tenant_with_32_gpus(copy: Path) -> None:
    def change(tenants: dict) -> None:
        tenants["vision"] = {
            "description": "Vision models",
            "quota": {"gpus": 32, "storage_gb": 2000, "volumes": 10},
            "object_storage": {"images": {"quota_tb": 50, "versioning": True, "keep_days": 7}},
        }

    edit(copy, "tenants.yaml", change)


def a_new_aistor_server_pool(copy: Path, servers: int = 4, acknowledge: bool = True) -> None:
    storage = yaml.safe_load((copy / "config" / "pools.yaml").read_text())["storage"]
    grow_pool(copy, "storage", "st", storage["count"] + servers)
    path = copy / "config" / "storage.yaml"
    text = path.read_text()
    existing = re.search(r"\n(\s+)- servers: \d+\n", text)
    assert existing, "storage.yaml lists its server pools as `- servers: N`"
    at = existing.end()
    path.write_text(f"{text[:at]}{existing.group(1)}- servers: {servers}\n{text[at:]}")
    if acknowledge:
        # two-cluster's AIStor load-balancer pool gives its top to the new front doors, and 34 storage
        # nodes get smaller IPoIB blocks of their cluster's half of each storage rail
        acknowledge_moves(copy, expected=3)


def a_chart_bump(copy: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Renovate's change (versions.yaml) and its post-upgrade task, from a local mirror."""
    versions = copy / "config" / "versions.yaml"
    old = f'version: "{PINNED_METRICS_SERVER}"'
    assert old in versions.read_text()
    versions.write_text(versions.read_text().replace(old, f'version: "{BUMPED_METRICS_SERVER}"', 1))
    archive = REPO / "vendor" / "charts" / f"metrics-server-{PINNED_METRICS_SERVER}.tgz"
    mirror = mirror_with(tmp_path, archive, BUMPED_METRICS_SERVER)
    return make(copy, "charts-renew", f"MIRROR={mirror}")


def synth_then(copy: Path, target: str) -> subprocess.CompletedProcess[str]:
    synth = make(copy, "synth")
    assert synth.returncode == 0, synth.stdout + synth.stderr
    return make(copy, target)


def test_every_change_at_once_passes_the_site_checks(copy, tmp_path):
    """The four changes on one site. The generator's tests need no run on it: they read their fixtures
    only (conftest refuses a test that reads config/ or dist/, tests/live_site.py), and the one file the
    seed fixture shares with the site, versions.yaml, reaches snapshots as pin names (tests/pins.py)."""
    for change in (more_gpu_nodes, a_tenant_with_32_gpus, a_new_aistor_server_pool):
        change(copy)
    assert a_chart_bump(copy, tmp_path).returncode == 0
    checked = synth_then(copy, "site")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr


@pytest.mark.parametrize(
    "change", [more_gpu_nodes, a_tenant_with_32_gpus, a_new_aistor_server_pool], ids=lambda c: c.__name__
)
def test_a_site_change_passes_the_site_checks(copy, change):
    change(copy)
    checked = synth_then(copy, "site")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr


def test_a_chart_bump_passes_the_site_checks(copy, tmp_path):
    renewed = a_chart_bump(copy, tmp_path)
    assert renewed.returncode == 0, renewed.stderr
    checked = synth_then(copy, "site")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr
    assert (copy / "vendor" / "charts" / f"metrics-server-{BUMPED_METRICS_SERVER}.tgz").is_file()
    lock = yaml.safe_load((copy / "charts.lock").read_text())
    assert lock["charts"]["metrics-server"]["version"] == BUMPED_METRICS_SERVER


def test_the_three_cluster_example_adopted_passes_the_site_checks_with_no_new_entry(copy):
    """Put-back: scanner entries named objects per cluster (and Cilium's Job by its cluster's digest),
    so adopting the three-cluster example turned the findings accepted for `ai` into 403 new ones for
    `gpu`. The example's files go over config/ as its overlay says (mappings key by key, lists
    replaced), the reviewed exceptions stay as they are."""
    from sitegen.model.extensions import merged

    example = copy / "config" / "examples" / "three-cluster"
    for path in sorted(example.glob("*.yaml")):
        target = copy / "config" / path.name
        if path.name == "overlay.yaml":
            continue
        if path.name == "variants.yaml":  # the clusters of the site: the example's set, whole
            target.write_text(path.read_text())
            continue
        both = merged(yaml.safe_load(target.read_text()), yaml.safe_load(path.read_text()))
        target.write_text(yaml.safe_dump(both, sort_keys=False))
    # the seed's variants go from dist/: said so, once each
    edit(copy, "gitops.yaml", lambda g: g.update(acknowledged_removals=["one-cluster", "two-cluster"]))
    exceptions = (copy / ".ci" / "scanner" / "exceptions.yaml").read_text()
    checked = synth_then(copy, "site")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr
    assert ", 0 new" in checked.stdout and sorted(
        p.name for p in (copy / "dist").iterdir() if p.is_dir()
    ) == ["three-cluster"]
    assert (copy / ".ci" / "scanner" / "exceptions.yaml").read_text() == exceptions


def test_a_site_that_deploys_one_variant_builds_and_checks_only_it(copy):
    """variants.yaml lists what the site deploys: with one variant, synth, the site checks and the scan
    cover that one; the generator's other variants stay its tested examples (tests/fixtures/)."""
    edit(copy, "variants.yaml", lambda v: v.pop("two-cluster"))
    edit(copy, "gitops.yaml", lambda g: g.update(acknowledged_removals=["two-cluster"]))
    checked = synth_then(copy, "site")
    assert sorted(p.name for p in (copy / "dist").iterdir() if p.is_dir()) == ["one-cluster"]
    assert "bring-up of one-cluster: every Application Healthy" in checked.stdout
    # an entry only the other variant needed (its spoke's collector reads a Secret as env) is the
    # site's to remove, as the scan says
    stale = re.findall(r"^STALE exception (\S+) \[(.*)\]: .* remove", checked.stdout, re.M)
    assert checked.returncode != 0 and stale, checked.stdout[-3000:] + checked.stderr
    exceptions = copy / ".ci" / "scanner" / "exceptions.yaml"
    names = {(check, n.strip().strip("'")) for check, line in stale for n in line.split(",")}
    kept, check = [], None
    for line in exceptions.read_text().splitlines():
        if line.startswith("- check: "):
            check = line.split()[2]
        if (check, line.removeprefix("    - ")) not in names:
            kept.append(line)
    exceptions.write_text("\n".join(kept) + "\n")
    scanned = make(copy, "scan")
    assert scanned.returncode == 0, scanned.stdout[-3000:] + scanned.stderr
    assert "two-cluster" not in checked.stdout + scanned.stdout


def test_an_invalid_cidr_stops_make_test_with_its_one_line(copy):
    def change(network: dict) -> None:
        network["kubernetes"]["cidr"] = "10.20.0.0/33"

    edit(copy, "network.yaml", change)
    tested = make(copy, "test")
    assert tested.returncode != 0
    errors = [line for line in tested.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: config/network.yaml: kubernetes.cidr"), errors
    assert "passed" not in tested.stdout  # stopped before the generator's tests


def test_a_two_server_pool_is_refused_with_the_safe_size(copy):
    a_new_aistor_server_pool(copy, servers=2, acknowledge=False)  # refused before any move
    synth = make(copy, "synth")
    assert synth.returncode != 0
    (error,) = [line for line in synth.stderr.splitlines() if line.startswith("error:")]
    assert "server_pools[1].servers" in error and "smallest pool that tolerates one has 3 servers" in error
