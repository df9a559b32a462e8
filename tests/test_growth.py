"""A running site grows without being disturbed: synth compares with the dist/ it replaces and refuses
a change to what runs (an AIStor pool's shape, a joined host's address or name, a control-plane
member), naming the config field; new hosts and a new AIStor server pool are fine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import DIST, edit_yaml, invoke_sitegen, tree_bytes

OBJECT_STORE = "one-cluster/apps/ai/aistor/aistor.objectstore.aistor.yaml"


def synth(config: Path, out: Path):
    return invoke_sitegen("synth", "--config", config, "--variant", "one-cluster", "--out", out)


def pools_of(out: Path) -> list[dict[str, Any]]:
    (store,) = [d for d in yaml.safe_load_all((out / OBJECT_STORE).read_text()) if d]
    return store["spec"]["pools"]


def add_storage_hosts(config: Path, n: int, server_pool: bool) -> None:
    def grow(pools):
        pools["storage"]["count"] += n
        pools["storage"]["hosts"].append({"names": f"st{{31..{30 + n}}}", "first_address": "10.20.2.31"})

    edit_yaml(config, "pools.yaml", grow)
    if server_pool:
        edit_yaml(config, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": n}))


@pytest.fixture
def running(config_copy: Path, tmp_path: Path, linked_copy) -> tuple[Path, Path]:
    """The fixture site as it runs: what a synth of its config writes for one-cluster (the seed's)."""
    out = tmp_path / "dist"
    linked_copy(DIST / "one-cluster", out / "one-cluster")
    return config_copy, out


def test_four_more_storage_servers_are_a_second_pool_and_pool_0_stays(running):
    config, out = running
    before = pools_of(out)
    add_storage_hosts(config, 4, server_pool=True)
    result = synth(config, out)
    assert result.exit_code == 0, result.output
    after = pools_of(out)
    assert after[0] == before[0]  # byte for byte the same entry
    assert (after[1]["name"], after[1]["servers"]) == ("pool-1", 4)


def test_more_storage_hosts_without_a_pool_are_refused(running):
    config, out = running
    add_storage_hosts(config, 4, server_pool=False)
    result = synth(config, out)
    assert result.exit_code == 2
    assert "storage.yaml: aistor.server_pools: hold 30 servers, pool 'storage' has 34 hosts" in result.output
    assert "add a server pool of 4" in result.output


def test_a_server_pool_that_tolerates_no_server_down_is_refused(running):
    """Two servers of 24 drives make sets of which each server holds half: EC:4 loses a set with
    either server. Refused, naming the smallest pool that keeps a server's loss (and the growth that
    gets there)."""
    config, out = running
    add_storage_hosts(config, 2, server_pool=False)
    result = synth(config, out)
    assert result.exit_code == 2
    assert (
        "a pool of 2 would tolerate no server down: grow pool 'storage' to 33 hosts and add a server pool of 3"
        in result.output
    )
    edit_yaml(config, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": 2}))  # anyway
    result = synth(config, out)
    assert result.exit_code == 2
    assert "aistor.server_pools[1].servers: a pool of 2 servers tolerates no server down" in result.output
    assert "the smallest pool that tolerates one has 3 servers" in result.output


def test_resizing_pool_0_is_a_one_line_error_and_dist_stays(running):
    config, out = running
    add_storage_hosts(config, 2, server_pool=False)
    edit_yaml(config, "storage.yaml", lambda s: s["aistor"]["server_pools"][0].update(servers=32))
    before = tree_bytes(out)
    result = synth(config, out)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "storage.yaml: aistor.server_pools[0].servers: AIStor pool-0 runs with servers 30" in line
    assert "Traceback" not in result.output
    assert tree_bytes(out) == before


def test_a_joined_host_readdressed_is_refused(running):
    config, out = running

    def readdress(pools):
        pools["gpu"]["hosts"][0]["first_address"] = "10.20.1.201"

    edit_yaml(config, "pools.yaml", readdress)
    result = synth(config, out)
    assert result.exit_code == 2
    assert "pools.yaml: gpu.hosts: gpu01 joined as 10.20.1.101" in result.output


def test_a_control_plane_member_replaced_takes_its_successor_named_in_config(running):
    """cp05 out, cp09 in: refused, naming the field that moves it; with the field, synth goes on and the
    RUNBOOK has the move's steps (cp09 joins, then cp05 leaves etcd)."""
    config, out = running

    def replace(pools):
        pools["control-plane"]["hosts"] = [
            {"names": "cp{01..04}", "first_address": "10.20.0.11"},
            {"name": "cp09", "address": "10.20.0.19"},
        ]

    edit_yaml(config, "pools.yaml", replace)
    before = tree_bytes(out)
    result = synth(config, out)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "clusters.yaml: ai.replaced_members: control-plane member cp05 of ai is gone" in line
    assert "(cp05: <host>)" in line and "Moving control-plane member" in line
    assert tree_bytes(out) == before
    edit_yaml(config, "clusters.yaml", lambda c: c["ai"].update(replaced_members={"cp05": "cp08"}))
    result = synth(config, out)
    assert (
        result.exit_code == 2
        and "ai.replaced_members.cp05: cp08 is no control-plane member of ai" in result.output
    )
    edit_yaml(config, "clusters.yaml", lambda c: c["ai"].update(replaced_members={"cp05": "cp09"}))
    result = synth(config, out)
    assert result.exit_code == 0, result.output
    runbook = (out / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    section = runbook[runbook.index("### Moving control-plane member cp05 to cp09 (`ai`)") :]
    join = section.index("kubeadm join --config")
    assert "join-control-plane-cp09.yaml" in section[:join]
    assert join < section.index("kubeadm reset -f   # on cp05") < section.index("kubectl delete node cp05")
