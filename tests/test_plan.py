"""The plan reproduces every figure of the seed from the model, and prints them."""

from __future__ import annotations

import re

from sitegen.model import load_site
from sitegen.report.plan import compute_plan, render_plan

from .conftest import CONFIG, edit_yaml, run_sitegen


def test_site_totals_match_the_seed(site):
    plan = compute_plan(site)
    assert plan.site.nodes == 102
    assert plan.site.cores == 11_136
    assert plan.site.gpus == 96
    assert plan.site.memory_gb == 107_040  # 107.04 TB


def test_storage_figures_match_the_seed(site):
    plan = compute_plan(site)
    assert plan.aistor_drives == 720
    assert plan.aistor_raw_gb == 22_118_400  # 22,118.4 TB
    assert plan.pools["gpu"].nvme_gb == 184_320  # 184.32 TB
    assert plan.hardware["hpe-dl380-gen12"].nvme_gb == 921_600  # 921.6 TB on all 60 HPE nodes
    assert plan.hardware["hpe-dl380-gen12"].nodes == 60
    assert plan.powerscale_raw_gb == 1_536_000  # 1.536 PB


def test_fabric_figures_match_the_seed(site):
    plan = compute_plan(site)
    assert plan.pools["gpu"].ndr_ports == 48
    assert plan.pools["storage"].ndr_ports == 60
    assert plan.ndr_gbps("gpu") == 19_200  # 12 x 4 x 400G
    assert plan.ndr_gbps("storage") == 24_000  # 30 x 2 x 400G


def test_ethernet_ports_per_pool(site):
    ports = {name: f.ethernet_ports for name, f in compute_plan(site).pools.items()}
    assert ports == {"control-plane": 20, "infra": 20, "compute": 200, "gpu": 24, "storage": 120}
    assert compute_plan(site).hardware["hpe-dl380-gen12"].ethernet_ports == 240


def test_rail_ports_follow_the_nic_map(site):
    rails = {r.rail: r.ports for r in compute_plan(site).rails}
    assert rails["A"] == {"gpu": 12, "storage": 30}
    assert rails["C"] == {"gpu": 12, "storage": 0}


def test_figures_follow_the_config(site):
    """A figure is computed, not typed: growing the GPU pool moves every GPU total."""
    pools = dict(site.pools)
    gpu = pools["gpu"]
    extra = gpu.hosts[0].model_copy(update={"name": "gpu13", "address": "10.20.1.113"})
    pools["gpu"] = gpu.model_copy(update={"count": 13, "hosts": [*gpu.hosts, extra]})
    plan = compute_plan(site.model_copy(update={"pools": pools}))
    assert plan.site.gpus == 104
    assert plan.ndr_gbps("gpu") == 13 * 4 * 400


def test_rendered_plan_shows_the_seed_figures(site):
    text = render_plan(site)
    for figure in ["11,136", "107.04", "22,118.4", "184.32", "921.6", "1.536 PB", "19.2", "720"]:
        assert figure in text, figure
    site_row = next(line for line in text.splitlines() if line.startswith("site "))
    assert site_row.split()[1:5] == ["102", "11,136", "107.04", "96"]


def test_plan_command_prints_the_table():
    result = run_sitegen("plan", "--config", CONFIG)
    assert result.returncode == 0, result.stderr
    assert "11,136" in result.stdout
    assert result.stderr == ""


def test_plan_says_when_aistor_is_off_the_fabric(site):
    """The seed's GPUDirect path to AIStor: deferred by `aistor.rdma: false`, and the plan says so
    beside the NDR bandwidth it would otherwise seem to claim."""
    assert "AIStor over the fabric: off (storage.yaml aistor.rdma: false)" in render_plan(site)
    on = site.model_copy(
        update={
            "storage": site.storage.model_copy(
                update={"aistor": site.storage.aistor.model_copy(update={"rdma": True})}
            )
        }
    )
    assert "AIStor over the fabric" not in render_plan(on)


def test_maintenance_budgets_follow_the_model(site, config_copy):
    """30 AIStor servers at EC:4 over 15-drive sets (one drive of a set per server): 2 servers may be
    down, two drives of parity kept for failures meanwhile (the configured margin); etcd of 5 keeps quorum with 2 down; the GPU
    pool keeps one node per model-server replica."""
    budgets = {b.pool: b.down for b in site.maintenance_budgets()}
    assert budgets == {"control-plane": 2, "storage/pool-0": 2, "gpu": 11}
    assert "Maintenance: nodes of a pool that may be down at once" in render_plan(site)
    edit_yaml(config_copy, "storage.yaml", lambda d: d["aistor"].update(parity=3))
    assert {b.pool: b.down for b in load_site(config_copy).maintenance_budgets()}["storage/pool-0"] == 1
    edit_yaml(config_copy, "storage.yaml", lambda d: d["aistor"].update(parity=4, maintenance_margin=1))
    assert {b.pool: b.down for b in load_site(config_copy).maintenance_budgets()}["storage/pool-0"] == 3


def test_a_second_aistor_pool_has_its_own_budget_and_capacity(config_copy):
    """Three servers added as pool-1: a 12-drive set holds 4 drives on each, so EC:4 covers one server
    down in pool-1 (with no parity left meanwhile) while pool-0 allows 2; plan shows each pool's capacity."""

    def grow(pools):
        pools["storage"]["count"] = 33
        pools["storage"]["hosts"].append({"names": "st{31..33}", "first_address": "10.20.2.31"})

    edit_yaml(config_copy, "pools.yaml", grow)
    edit_yaml(config_copy, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": 3}))
    site = load_site(config_copy)
    budgets = {b.pool: b.down for b in site.maintenance_budgets()}
    assert (budgets["storage/pool-0"], budgets["storage/pool-1"]) == (2, 1)
    assert "no parity left" in next(b.why for b in site.maintenance_budgets() if b.pool == "storage/pool-1")
    plan = render_plan(site)
    assert re.search(r"pool-1 +3 +72 +6 +12 +EC:4 ", plan), plan


def test_a_set_wider_than_the_servers_halves_the_aistor_budget():
    from sitegen.model.erasure import ErasureLayout
    from sitegen.model.maintenance import aistor_budget

    wide = ErasureLayout(set_size=32, parity=4, drives=16 * 24, raw_gb=0)
    # two drives of every set on each server: EC:4 covers two servers, one with a drive kept spare
    assert aistor_budget("storage", 16, wide).down == 1
