"""Synth benchmark (`make bench`): the budgets of hydration, measured side by side in one run.

- cold: both variants with an empty render cache (every chart rendered, on every core), against bare
  `helm template` runs of the same charts and values on as many cores (budget 1.5x);
- warm: nothing changed, against a bare cdk8s app that synthesizes one object (budget 3x);
- edit loop: synth after a config change that touches no chart, into the dist/ it replaces, as a site
  owner runs it (composition, cdk8s, cached renders, the checks against the running dist/, write)
  against a bare cdk8s app, on the same Node, that synthesizes as many objects as our constructs do
  (budget 1.5x);
- growth: the full path (composition, cdk8s, cached renders, write into a new folder) of a site with
  every pool scaled 10x against the site itself (budget 1.5x);
- bring-up: `sitegen bringup` of every variant (first install and day 2) against a bare cdk8s app that
  synthesizes as many objects as the simulation reads (budget 3x).

Not a test: numbers depend on the machine. Run it before and after a heavy change and compare.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

import yaml

from sitegen.check.bringup import from_dist
from sitegen.compose.hydrate import RenderJob, helm_arguments
from sitegen.compose.variant import render_jobs
from sitegen.model import load_site
from sitegen.model.paths import BOOTSTRAP, DistPath
from sitegen.tree.documents import documents

SITEGEN = Path(sys.executable).parent / "sitegen"
ONE_OBJECT_APP = """
import sys
from cdk8s import ApiObject, App, Chart
app = App(outdir=sys.argv[1])
ApiObject(Chart(app, "one"), "cm", api_version="v1", kind="ConfigMap", metadata={"name": "one"})
app.synth()
"""
MANY_OBJECTS_APP = """
import sys
from cdk8s import ApiObject, App, Chart
app = App(outdir=sys.argv[1])
chart = Chart(app, "objects")
for i in range(int(sys.argv[2])):
    ApiObject(chart, f"cm{i}", api_version="v1", kind="ConfigMap", metadata={"name": f"cm-{i}"})
app.synth()
"""


def _timed(runs: int, action: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def _run(*args: str | Path, env: dict[str, str] | None = None) -> None:
    subprocess.run([str(a) for a in args], check=True, capture_output=True, env=env)


def _bare_helm(jobs: list[RenderJob]) -> float:
    """Plain `helm template` runs of the same charts and values, on as many cores as synth renders
    with, largest first as synth orders them: the floor of a cold synth on this machine."""
    with tempfile.TemporaryDirectory() as tmp:
        commands = []
        for i, job in enumerate(sorted(jobs, key=lambda j: -Path(j.archive).stat().st_size)):
            values = Path(tmp) / f"values-{i}.yaml"
            values.write_text(yaml.safe_dump(job.values))
            commands.append(helm_arguments(job, values))
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
            list(pool.map(lambda command: _run(*command), commands))
        return time.perf_counter() - start


def scaled_config(source: Path, target: Path, factor: int) -> int:
    """A copy of config/ with every worker pool `factor` times larger (hosts numbered on, addresses
    from a wider Kubernetes plane, pod networks that hold the nodes); returns the node count."""
    shutil.copytree(source, target)
    pools = yaml.safe_load((source / "pools.yaml").read_text())
    address = ipaddress.IPv4Address("10.20.16.1")
    nodes = 0
    site = load_site(source)
    for name, pool in pools.items():
        prefix = site.pools[name].hosts[0].name.rstrip("0123456789")
        # the control plane stays: etcd above 7 members is refused (and would only slow writes)
        count = pool["count"] if site.pools[name].role == "control-plane" else pool["count"] * factor
        pool["count"] = count
        pool["hosts"] = [{"names": f"{prefix}{{01..{count}}}", "first_address": str(address + 1)}]
        address += count + 1
        nodes += count
    (target / "pools.yaml").write_text(yaml.safe_dump(pools, sort_keys=False))
    network = yaml.safe_load((source / "network.yaml").read_text())
    network["kubernetes"]["cidr"] = "10.20.0.0/19"
    for plane in network["management"].values():
        plane["cidr"] = str(ipaddress.IPv4Network(plane["cidr"]).supernet(new_prefix=20))
    (target / "network.yaml").write_text(yaml.safe_dump(network, sort_keys=False))
    clusters = yaml.safe_load((source / "clusters.yaml").read_text())
    for i, cluster in enumerate(clusters.values()):
        cluster["pod_cidr"] = f"10.{64 + 4 * i}.0.0/14"
        if i:  # room for an S3 front door per storage host (the first keeps the gateway's address)
            cluster["load_balancer_cidr"] = f"10.20.{4 + 4 * i}.0/22"
    (target / "clusters.yaml").write_text(yaml.safe_dump(clusters, sort_keys=False))
    # the scaled storage pool as AIStor server pools of the original size (how the site would grow)
    storage = yaml.safe_load((source / "storage.yaml").read_text())
    tier = storage["aistor"]
    tier["server_pools"] = [dict(p) for p in tier["server_pools"] for _ in range(factor)]
    (target / "storage.yaml").write_text(yaml.safe_dump(storage, sort_keys=False))
    return nodes


def _edit_loop(config: Path, root: Path, runs: int, env: dict[str, str]) -> list[float]:
    """Synth after a change of config that touches no chart, into the dist/ it replaces: the age at which
    the GPU health checks alert, one day up and down in turn (one alert rule changes)."""
    edit, out = root / "edit-config", root / "edit-dist"
    shutil.copytree(config, edit)
    _run(SITEGEN, "synth", "--config", edit, "--out", out, env=env)
    days, times = load_site(config).services.health.max_age_days, []
    for step in range(runs):
        set_health_age(edit, days + (step + 1) % 2)
        times += _timed(1, lambda: _run(SITEGEN, "synth", "--config", edit, "--out", out, env=env))
    return times


def set_health_age(config: Path, days: int) -> None:
    """The edit loop's change: services.yaml's `health.max_age_days`, nothing else."""
    services = yaml.safe_load((config / "services.yaml").read_text())
    services.setdefault("health", {})["max_age_days"] = days
    (config / "services.yaml").write_text(yaml.safe_dump(services, sort_keys=False))


def _objects_read(dist: Path) -> int:
    """The objects the bring-up simulation reads: every document of every variant's YAML files."""
    variants = [v.name for v in sorted(dist.iterdir()) if v.is_dir()]
    return sum(len(docs) for variant in variants for docs in from_dist(dist, variant)[0].values())


def _objects_composed(dist: Path) -> int:
    """The objects our constructs make (not the charts' renders): every document of the non-chart apps'
    folders and of bootstrap/, in every variant."""
    from sitegen.components.base import ChartComponent
    from sitegen.components.catalog import COMPONENTS

    charts = {kind.name for kind in COMPONENTS if issubclass(kind, ChartComponent)}
    files = {
        rel: path
        for path in sorted(dist.glob("*/*/**/*.yaml"))
        if (where := DistPath(rel := PurePosixPath(path.relative_to(dist).as_posix()))).area == BOOTSTRAP
        or (where.app is not None and where.app not in charts)
    }
    return sum(1 for rel, path in files.items() for doc in documents(rel, path.read_bytes()) if doc.kind)


def _report(name: str, measured: float, base_name: str, base: float, budget: float) -> None:
    ratio = measured / base
    verdict = "within" if ratio <= budget else "OVER"
    print(
        f"{name:34} {measured:7.2f} s  vs {base_name:30} {base:7.2f} s  = {ratio:4.2f}x ({verdict} {budget}x)"
    )


def main(runs: int = 3) -> None:
    config = Path("config")
    site = load_site(config)
    jobs = render_jobs(site, list(site.variants))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cold_env = {**os.environ, "SITEGEN_CACHE": str(root / "cold-cache")}
        bare = statistics.median(_bare_helm(jobs) for _ in range(runs))

        def cold() -> None:
            for folder in ("renders", "synth"):
                shutil.rmtree(root / "cold-cache" / folder, ignore_errors=True)
            _run(SITEGEN, "synth", "--out", root / "cold", env=cold_env)

        cold_times = _timed(runs, cold)
        warm_times = _timed(runs, lambda: _run(SITEGEN, "synth", "--out", root / "cold", env=cold_env))
        script = root / "one.py"
        script.write_text(ONE_OBJECT_APP)
        one_times = _timed(runs, lambda: _run(sys.executable, script, root / "one"))

        # the full path (composition, cdk8s, cached renders, write): a new output folder each run
        fresh = iter(range(10 * runs))
        nodes = scaled_config(config, root / "scaled", 10)

        def full(config_dir: Path) -> None:
            _run(
                SITEGEN, "synth", "--config", config_dir, "--out", root / f"full-{next(fresh)}", env=cold_env
            )

        full(root / "scaled")  # its charts rendered once: growth is about nodes
        full_times = _timed(runs, lambda: full(config))
        scaled_times = _timed(runs, lambda: full(root / "scaled"))
        edit_times = _edit_loop(config, root, runs, cold_env)
        many = root / "many.py"
        many.write_text(MANY_OBJECTS_APP)
        composed = _objects_composed(root / "cold")
        composed_times = _timed(runs, lambda: _run(sys.executable, many, root / "composed", str(composed)))
        read = _objects_read(root / "cold")
        many_times = _timed(runs, lambda: _run(sys.executable, many, root / "many", str(read)))
        bringup_times = _timed(runs, lambda: _run(SITEGEN, "bringup", "--dist", root / "cold"))
        sizes = {
            variant.name: sum(p.stat().st_size for p in variant.rglob("*") if p.is_file())
            for variant in sorted((root / "cold").iterdir())
            if variant.is_dir()
        }

    print(f"{len(jobs)} chart renders in {len(site.variants)} variants; median of {runs} runs each")
    _report(
        "cold synth, both variants",
        statistics.median(cold_times),
        "bare helm template, same cores",
        bare,
        1.5,
    )
    one = statistics.median(one_times)
    _report("warm synth, nothing changed", statistics.median(warm_times), "cdk8s app of one object", one, 3.0)
    _report(
        "edit loop, into dist/",
        statistics.median(edit_times),
        f"cdk8s app of {composed} objects",
        statistics.median(composed_times),
        1.5,
    )
    base = statistics.median(full_times)
    own = sum(p.count for p in site.pools.values())
    _report(
        f"full path, {nodes} nodes", statistics.median(scaled_times), f"full path, {own} nodes", base, 1.5
    )
    _report(
        "bring-up, every variant",
        statistics.median(bringup_times),
        f"cdk8s app of {read} objects",
        statistics.median(many_times),
        3.0,
    )
    for variant, size in sizes.items():
        print(f"dist/{variant}: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
