"""Addresses and names that running clients and hosts hold stay put, or move only when config says so:
synth compares with the dist/ it replaces (compose/live_addresses.py) and refuses an unacknowledged
move, naming `gitops.yaml` `acknowledged_moves` and the entry to add."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import yaml

from sitegen.compose.live_addresses import check_moves, moves
from sitegen.model import ConfigError

from .conftest import DIST, edit_yaml, invoke_sitegen

VARIANT = "two-cluster"
FRONT_DOORS = "apps/aistor/aistor"


def s3_addresses(out: Path) -> dict[str, str]:
    found = {}
    for path in sorted((out / VARIANT / FRONT_DOORS).glob("aistor.service.s3-*.yaml")):
        (service,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
        found[service["metadata"]["name"]] = service["metadata"]["annotations"]["lbipam.cilium.io/ips"]
    return found


def synth(config: Path, out: Path, *more: str):
    return invoke_sitegen("synth", "--config", config, "--variant", VARIANT, "--out", out, *more)


def test_growing_aistor_keeps_every_s3_front_door_and_asks_before_what_must_move(
    config_copy, tmp_path, linked_copy
):
    """Put-back: front doors were the top of the range in host order, so one more storage host moved all
    30 addresses (and their DNS records) and nothing said so."""
    out = tmp_path / "dist"
    linked_copy(DIST / VARIANT, out / VARIANT)  # the running site
    before = s3_addresses(out)

    def grow(pools):
        pools["storage"]["count"] += 4
        pools["storage"]["hosts"].append({"names": "st{31..34}", "first_address": "10.20.2.31"})

    edit_yaml(config_copy, "pools.yaml", grow)
    edit_yaml(config_copy, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": 4}))
    refused = synth(config_copy, out)
    assert refused.exit_code == 2, refused.output
    assert "gitops.yaml: acknowledged_moves: 3 live addresses or names would move" in refused.output
    assert s3_addresses(out) == before  # dist/ untouched

    # what does move: the general pool gives its top to the new front doors, and 34 storage nodes no
    # longer get 64 addresses each of their clusters' half of a storage rail
    shown = synth(config_copy, out, "--show-moves")
    entries = [line.strip()[3:-1] for line in shown.output.splitlines() if line.startswith("  - ")]
    assert entries == [
        f"{VARIANT}/aistor CiliumLoadBalancerIPPool aistor-services addresses: "
        "10.20.3.129-10.20.3.224 -> 10.20.3.129-10.20.3.220",
        f"{VARIANT}/aistor IPPool nvidia-network-operator/rail-a perNodeBlockSize: 64 -> 32",
        f"{VARIANT}/aistor IPPool nvidia-network-operator/rail-b perNodeBlockSize: 64 -> 32",
    ]
    edit_yaml(config_copy, "gitops.yaml", lambda g: g.update(acknowledged_moves=entries))
    result = synth(config_copy, out)
    assert result.exit_code == 0, result.output
    after = s3_addresses(out)
    assert {name: after[name] for name in before} == before
    new = sorted(set(after) - set(before))
    assert new == ["s3-st31", "s3-st32", "s3-st33", "s3-st34"]
    assert max(after[n] for n in new) < min(before.values(), key=lambda a: tuple(map(int, a.split("."))))


def _tree(*docs: dict, path: str = f"{VARIANT}/kubeadm/ai/init-cp01.yaml") -> dict[PurePosixPath, bytes]:
    return {PurePosixPath(path): yaml.safe_dump_all(docs).encode()}


def _moved(old: dict[PurePosixPath, bytes], new: dict[PurePosixPath, bytes], tmp_path: Path) -> list[str]:
    for path, data in old.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    return moves(new, tmp_path)


def test_the_api_servers_endpoint_and_certificate_names_are_held(tmp_path):
    config = {
        "kind": "ClusterConfiguration",
        "clusterName": "ai",
        "controlPlaneEndpoint": "api.ai.hpc.example.internal:6443",
        "apiServer": {"certSANs": ["api.ai.hpc.example.internal", "10.20.0.10"]},
        "networking": {
            "dnsDomain": "cluster.local",
            "podSubnet": "10.64.0.0/16",
            "serviceSubnet": "10.96.0.0/16",
        },
    }
    renamed = {
        **config,
        "controlPlaneEndpoint": "api.ai.site.example:6443",
        "apiServer": {"certSANs": ["api.ai.site.example", "10.20.0.10"]},
    }
    assert _moved(_tree(config), _tree(renamed), tmp_path) == [
        f"{VARIANT}/ai API server certificate names: api.ai.hpc.example.internal, 10.20.0.10 -> "
        "api.ai.site.example, 10.20.0.10",
        f"{VARIANT}/ai API server endpoint: api.ai.hpc.example.internal:6443 -> api.ai.site.example:6443",
    ]
    assert _moved(_tree(config), _tree(config), tmp_path / "same") == []


def test_a_rails_node_blocks_and_a_shrinking_pool_move_a_grown_pool_does_not(tmp_path):
    path = f"{VARIANT}/apps/aistor/fabric/nvidia-network-operator.ippool.rail-a.yaml"
    rail = {"kind": "IPPool", "metadata": {"name": "rail-a", "namespace": "nvidia-network-operator"},
            "spec": {"subnet": "10.40.0.0/17", "perNodeBlockSize": 2048}}  # fmt: skip
    halved = {**rail, "spec": {**rail["spec"], "perNodeBlockSize": 1024}}
    assert _moved(_tree(rail, path=path), _tree(halved, path=path), tmp_path / "a") == [
        f"{VARIANT}/aistor IPPool nvidia-network-operator/rail-a perNodeBlockSize: 2048 -> 1024"
    ]
    path = f"{VARIANT}/apps/aistor/cilium-lb/ciliumloadbalancerippool.aistor-services.yaml"
    pool = {"kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "aistor-services"},
            "spec": {"blocks": [{"start": "10.20.3.1", "stop": "10.20.3.224"}]}}  # fmt: skip
    grown = {**pool, "spec": {"blocks": [{"start": "10.20.3.1", "stop": "10.20.3.230"}]}}
    shrunk = {**pool, "spec": {"blocks": [{"start": "10.20.3.1", "stop": "10.20.3.220"}]}}
    split = {
        **pool,
        "spec": {"blocks": [{"cidr": "10.20.3.0/25"}, {"start": "10.20.3.128", "stop": "10.20.3.224"}]},
    }
    assert _moved(_tree(pool, path=path), _tree(grown, path=path), tmp_path / "b") == []
    assert _moved(_tree(pool, path=path), _tree(split, path=path), tmp_path / "c") == []
    assert _moved(_tree(pool, path=path), _tree(shrunk, path=path), tmp_path / "d") == [
        f"{VARIANT}/aistor CiliumLoadBalancerIPPool aistor-services addresses: "
        "10.20.3.1-10.20.3.224 -> 10.20.3.1-10.20.3.220"
    ]


def test_an_acknowledgment_holds_for_its_move_only(site, tmp_path):
    path = f"{VARIANT}/apps/ai/gateway/envoy-gateway-system.envoyproxy.site.yaml"
    proxy = {"kind": "EnvoyProxy", "metadata": {"name": "site", "namespace": "envoy-gateway-system"},
             "spec": {"provider": {"kubernetes": {"envoyService": {
                 "annotations": {"lbipam.cilium.io/ips": "10.20.3.10"}}}}}}  # fmt: skip

    def at(address: str) -> dict[PurePosixPath, bytes]:
        service = proxy["spec"]["provider"]["kubernetes"]["envoyService"]
        return _tree({**proxy, "spec": {"provider": {"kubernetes": {"envoyService": {
            **service, "annotations": {"lbipam.cilium.io/ips": address}}}}}}, path=path)  # fmt: skip

    _moved(at("10.20.3.10"), {}, tmp_path)
    (entry,) = moves(at("10.20.3.11"), tmp_path)
    assert entry == (
        f"{VARIANT}/ai EnvoyProxy envoy-gateway-system/site address "
        "(spec.provider.kubernetes.envoyService.annotations): 10.20.3.10 -> 10.20.3.11"
    )
    acked = site.model_copy(update={"gitops": site.gitops.model_copy(update={"acknowledged_moves": [entry]})})
    check_moves(acked, at("10.20.3.11"), tmp_path)
    try:
        check_moves(acked, at("10.20.3.12"), tmp_path)
    except ConfigError as fault:
        assert fault.loc == ("gitops", "acknowledged_moves") and "10.20.3.10 -> 10.20.3.12" in fault.message
    else:
        raise AssertionError("a move to another address passed on the first move's acknowledgment")


def test_only_files_that_will_hold_a_live_value_are_read_back(tmp_path, monkeypatch):
    """The comparison read every file of the dist/ it replaces (45 MB, a tenth of the edit loop); an
    object's file is named by its kind and name, so only the files that will hold a value are read."""
    pool_path = f"{VARIANT}/apps/aistor/cilium-lb/ciliumloadbalancerippool.aistor-services.yaml"
    pool = {"kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "aistor-services"},
            "spec": {"blocks": [{"start": "10.20.3.1", "stop": "10.20.3.224"}]}}  # fmt: skip
    plain_path = f"{VARIANT}/apps/aistor/aistor/aistor.configmap.plain.yaml"
    plain = {"kind": "ConfigMap", "metadata": {"name": "plain", "namespace": "aistor"}}
    old = {**_tree(pool, path=pool_path), **_tree(plain, path=plain_path)}
    shrunk = {**pool, "spec": {"blocks": [{"start": "10.20.3.1", "stop": "10.20.3.220"}]}}
    for path, data in old.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    read: list[str] = []
    original = Path.read_bytes

    def counted(self: Path) -> bytes:
        read.append(self.relative_to(tmp_path).as_posix())
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    assert moves({**_tree(shrunk, path=pool_path), **_tree(plain, path=plain_path)}, tmp_path) == [
        f"{VARIANT}/aistor CiliumLoadBalancerIPPool aistor-services addresses: "
        "10.20.3.1-10.20.3.224 -> 10.20.3.1-10.20.3.220"
    ]
    assert read == [pool_path]
