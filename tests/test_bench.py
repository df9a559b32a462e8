"""The benchmark's 10x site is a valid config (the budget is measured on a site that synthesizes)."""

from __future__ import annotations

from sitegen.model import load_site
from sitegen.report.bench import scaled_config

from .conftest import CONFIG


def test_the_scaled_site_loads_with_ten_times_the_workers(tmp_path, site):
    nodes = scaled_config(CONFIG, tmp_path / "scaled", 10)
    scaled = load_site(tmp_path / "scaled")
    control_plane = site.pools["control-plane"].count  # etcd stays at its size
    workers = sum(p.count for p in site.pools.values()) - control_plane
    assert nodes == control_plane + 10 * workers == sum(len(p.hosts) for p in scaled.pools.values())
