"""The RUNBOOK's day-2 procedures come from the model: budgets, batch sizes and etcd membership change
with the pools, and none of it is replayed as a bring-up step."""

from __future__ import annotations

from sitegen.check.bringup.simulate import runbook_steps
from sitegen.compose.apps import variant_apps
from sitegen.compose.day2 import day2
from sitegen.model import load_site, resolve

from .conftest import DIST, edit_yaml


def text(config) -> str:
    site = load_site(config)
    return day2(variant_apps(site, resolve(site, "two-cluster")))


def test_the_procedures_follow_the_pools(config_copy):
    before = text(config_copy)
    assert "`gpu` (12 of gpu01 ... gpu12): at most **11** down" in before
    assert "`storage/pool-0` (30 servers of storage): at most **4** down" in before
    assert "pool `storage` (30 nodes): 4 at a time" in before

    def fewer_gpus_more_storage(pools):
        pools["gpu"]["count"] = 8
        pools["gpu"]["hosts"] = [{"names": "gpu{01..08}", "first_address": "10.20.1.101"}]
        pools["storage"]["count"] = 32
        pools["storage"]["hosts"].append({"names": "st{31..32}", "first_address": "10.20.2.31"})

    edit_yaml(config_copy, "pools.yaml", fewer_gpus_more_storage)
    edit_yaml(config_copy, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": 2}))
    after = text(config_copy)
    assert "`gpu` (8 of gpu01 ... gpu08): at most **7** down" in after
    assert "pool `gpu` (8 nodes): 7 at a time" in after
    # pool-1's 16-drive sets hold 8 drives on each of its 2 servers: none may go, so the storage
    # pool's upgrade batch drops to one node
    assert "`storage/pool-1` (2 servers of storage): at most **0** down" in after
    assert "pool `storage` (32 nodes): 1 at a time" in after


def test_day_two_is_in_the_runbook_and_not_replayed():
    runbook = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    day_two = runbook.index("## Day 2")
    for heading in (
        "Taking a GPU node out",
        "Replacing an AIStor drive",
        "Upgrading Kubernetes",
        "etcd: snapshot and restore",
    ):
        assert runbook.index(heading) > day_two
    assert all(runbook.index(f"### {s.number}. ") < day_two for s in runbook_steps(runbook))
