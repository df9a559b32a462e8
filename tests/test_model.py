"""The default site loads, and the model derives what the config does not type."""

from __future__ import annotations

import pytest

from sitegen.model import ROLE_PREFIX, load_site

from .conftest import CONFIG, edit_yaml


def test_default_site_is_the_seed_plan(site):
    assert {name: pool.count for name, pool in site.pools.items()} == {
        "control-plane": 5,
        "infra": 5,
        "compute": 50,
        "gpu": 12,
        "storage": 30,
    }
    assert site.control_plane_pool == "control-plane"
    assert site.default_variant == "one-cluster"
    assert list(site.variants) == ["one-cluster", "two-cluster"]


def test_every_pool_has_its_role_label(site):
    roles = {name: pool.role for name, pool in site.pools.items()}
    assert roles == {
        "control-plane": "control-plane",
        "infra": "infra",
        "compute": "compute",
        "gpu": "gpu",
        "storage": "aistor",
    }
    for name in site.pools:
        assert ROLE_PREFIX + roles[name] in site.node_labels(name)


def test_gpu_count_label_is_derived_from_the_hardware(config_copy):
    def eight_to_four(hardware):
        hardware["dell-xe9780"]["gpu"]["count"] = 4

    def remap(fabric):
        fabric["nics"]["gpu"] = [
            {"name": f"mlx5_{i}", "netdev": f"ibs{i}", "rail": rail, "gpus": [i]}
            for i, rail in enumerate("ABCD")
        ]

    edit_yaml(config_copy, "hardware.yaml", eight_to_four)
    edit_yaml(config_copy, "fabric.yaml", remap)
    assert load_site(config_copy).node_labels("gpu")["gpu-count"] == "4"


def test_pool_without_taints_and_other_valid_edits_load(config_copy):
    """Valid changes stay valid: a bigger compute pool with fresh hosts."""

    def grow(pools):
        pools["compute"]["count"] = 51
        pools["compute"]["hosts"].append({"name": "cmp51", "address": "10.20.1.51"})

    edit_yaml(config_copy, "pools.yaml", grow)
    assert load_site(config_copy).pools["compute"].count == 51


@pytest.mark.parametrize("name", ["kube-vip"])
def test_required_images_are_pinned(site, name):
    pin = site.versions.images[name]
    assert pin.tag and pin.tag != "latest"


def test_config_dir_is_the_only_input():
    """Loading twice gives equal models: no hidden state, no clock."""
    assert load_site(CONFIG) == load_site(CONFIG)


def test_host_ranges_expand_like_an_inventory():
    from sitegen.model.pools import HostRange

    hosts = HostRange(names="gpu{08..12}", first_address="10.20.1.101", step=2, skip=[10]).expand()
    assert [(h.name, str(h.address)) for h in hosts] == [
        ("gpu08", "10.20.1.101"),
        ("gpu09", "10.20.1.103"),
        ("gpu11", "10.20.1.107"),  # a skipped number keeps the others' addresses
        ("gpu12", "10.20.1.109"),
    ]
    assert [h.name for h in HostRange(names="r1-n{7..10}-x", first_address="10.0.0.1").expand()] == [
        "r1-n7-x",
        "r1-n8-x",
        "r1-n9-x",
        "r1-n10-x",
    ]


def test_the_default_pools_are_ranges_that_expand_to_the_seed_hosts(site):
    assert [h.name for h in site.pools["compute"].hosts][:3] == ["cmp01", "cmp02", "cmp03"]
    assert str(site.pools["storage"].hosts[-1].address) == "10.20.2.30"
    assert sum(len(p.hosts) for p in site.pools.values()) == 102
