"""Property tests: generated valid sites synthesize and validate; mutated configs never crash."""

from __future__ import annotations

import copy
import ipaddress
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitegen.check.validate import validate_tree
from sitegen.compose.variant import synthesize
from sitegen.compose.writer import write_dist
from sitegen.model import load_site, symmetric_set_sizes
from sitegen.model.erasure import default_parity
from sitegen.model.maintenance import servers_down_tolerated

from .conftest import CONFIG, invoke_sitegen

BASE = {p.stem: yaml.safe_load(p.read_text()) for p in sorted(CONFIG.glob("*.yaml"))}


def _tolerant_pool(servers: int) -> bool:
    sizes = symmetric_set_sizes(servers, 24 * servers)
    return bool(sizes) and bool(servers_down_tolerated(servers, 24, None, default_parity(max(sizes))))


PREFIX = {"control-plane": "cp", "infra": "infra", "compute": "cmp", "gpu": "gpu", "storage": "st"}
FIRST_HOST = ipaddress.IPv4Address("10.20.0.32")  # above the VIPs, below the load-balancer pools

# CI runs the same examples every time; explore locally with `pytest --hypothesis-seed=random`.
PROPERTY = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@st.composite
def sites(draw: st.DrawFn) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    counts = {
        "control-plane": draw(st.sampled_from([1, 3, 5])),
        "infra": draw(st.integers(1, 6)),
        "compute": draw(st.integers(4, 40)),
        "gpu": draw(st.integers(1, 16)),
        # AIStor needs a symmetric erasure layout (17 servers of 24 drives have none) that keeps serving
        # with a server down (1 or 2 servers do not): model rules, checked by their own tests
        "storage": draw(st.integers(1, 40).filter(_tolerant_pool)),
    }
    config["storage"]["aistor"]["server_pools"] = [{"servers": counts["storage"]}]
    for tenant in config["tenants"].values():  # a server's worth of buckets fits every pool drawn
        tenant["object_storage"] = {
            name: {**b, "quota_tb": 10} for name, b in tenant["object_storage"].items()
        }
    address = FIRST_HOST
    for pool, count in counts.items():
        config["pools"][pool]["count"] = count
        config["pools"][pool]["hosts"] = []
        for i in range(1, count + 1):
            config["pools"][pool]["hosts"].append({"name": f"{PREFIX[pool]}{i:02d}", "address": str(address)})
            address += 1

    gpus = draw(st.sampled_from([4, 8]))
    nics = draw(st.sampled_from([n for n in (1, 2, 4, 8) if n <= gpus]))
    rails = nics  # rail-optimised: one NIC per rail
    names = "ABCDEFGH"[:rails]
    config["hardware"]["dell-xe9780"]["gpu"]["count"] = gpus
    config["hardware"]["dell-xe9780"]["ndr400_ports"] = nics
    fabric = config["fabric"]
    fabric["rails"] = {name: {"cidr": f"10.100.{16 * i}.0/20"} for i, name in enumerate(names)}
    per_nic = gpus // nics
    fabric["nics"]["gpu"] = [
        {
            "name": f"mlx5_{i}",
            "netdev": f"ib{names[i].lower()}",
            "rail": names[i],
            "gpus": list(range(i * per_nic, (i + 1) * per_nic)),
        }
        for i in range(nics)
    ]
    storage_nics = draw(st.integers(1, min(2, rails)))
    config["hardware"]["lenovo-sr650-v4"]["ndr400_ports"] = storage_nics
    fabric["nics"]["storage"] = [
        {"name": f"mlx5_{i}", "netdev": f"ib{names[i].lower()}", "rail": names[i]}
        for i in range(storage_nics)
    ]

    carve = draw(st.sampled_from([1, 3]))
    cmp_hosts = [h["name"] for h in config["pools"]["compute"]["hosts"]]
    config["variants"]["two-cluster"]["clusters"]["aistor"]["control_plane"]["hosts"] = cmp_hosts[-carve:]
    return config


def _write(config: dict[str, Any], target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name, data in config.items():
        (target / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return target


@PROPERTY
@given(config=sites())
def test_generated_sites_synthesize_and_validate(tmp_path_factory, config):
    root = tmp_path_factory.mktemp("site")
    site = load_site(_write(config, root / "config"))
    write_dist(synthesize(site, list(site.variants)), root / "dist", None)
    report = validate_tree(root / "dist", site)
    assert report.findings == [], [str(f) for f in report.findings[:5]]
    listed = (
        root / "dist/one-cluster/apps/ai/node-labels/node-labeler.configmap.node-labels.yaml"
    ).read_text()
    hosts = yaml.safe_load(listed.split("---\n", 1)[1])["data"]["nodes.txt"].splitlines()
    assert len(hosts) == sum(pool["count"] for pool in config["pools"].values())


def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [path] + [leaf for k, v in node.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [path] + [leaf for i, v in enumerate(node) for leaf in _leaves(v, (*path, i))]
    return [path]


LEAVES = [(file, path) for file, data in BASE.items() for path in _leaves(data) if path]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(target=st.sampled_from(LEAVES), action=st.sampled_from(["replace", "delete"]), junk=JUNK)
def test_mutated_configs_never_crash(tmp_path_factory, target, action, junk):
    file, path = target
    config = copy.deepcopy(BASE)
    parent = config[file]
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk
    root = tmp_path_factory.mktemp("mutant")
    result = invoke_sitegen("synth", "--config", _write(config, root / "config"), "--out", root / "dist")
    # a clean run has no exception, a config error a SystemExit(2); anything else is a traceback
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{file}:{path}: {result.exception!r}"
    )
    assert result.exit_code in (0, 2)
    if result.exit_code == 2:  # a line per problem, each naming its file
        lines = result.stderr.splitlines()
        assert lines and all(
            line.startswith("error: ") and (".yaml" in line or ".json" in line) for line in lines
        )


# --- impossible sites: each refused by the rule that should refuse it -----------------------------

RULE_PROPERTY = settings(max_examples=25, deadline=None, derandomize=True)


def _refused(config: dict[str, Any], tmp: Path) -> str | None:
    """The one-line fault loading `config` gives, or None when it loads."""
    from sitegen.model import ConfigFault

    try:
        load_site(_write(config, tmp))
    except ConfigFault as fault:
        return str(fault)
    return None


@RULE_PROPERTY
@given(prefix=st.integers(14, 26), mask=st.integers(20, 28))
def test_pod_cidr_capacity(tmp_path_factory, prefix, mask):
    config = copy.deepcopy(BASE)
    config["clusters"]["ai"]["pod_cidr"] = f"10.128.0.0/{prefix}"  # clear of every other range
    config["clusters"]["ai"]["pod_cidr_node_mask"] = mask
    fault = _refused(config, tmp_path_factory.mktemp("cfg"))
    nodes = sum(pool["count"] for pool in config["pools"].values())  # one-cluster: every node in ai
    if prefix > mask or 2 ** (mask - prefix) < nodes:
        assert fault is not None and "clusters.yaml: ai.pod_cidr: " in fault, fault
    else:
        assert fault is None, fault


@RULE_PROPERTY
@given(members=st.integers(1, 11))
def test_control_plane_size(tmp_path_factory, members):
    config = copy.deepcopy(BASE)
    pool = config["pools"]["control-plane"]
    pool["count"] = members
    pool["hosts"] = [{"name": f"cp{i:02d}", "address": f"10.20.0.{100 + i}"} for i in range(1, members + 1)]
    fault = _refused(config, tmp_path_factory.mktemp("cfg"))
    if members % 2 == 0 or members > 7:
        assert fault is not None and "pools.yaml: control-plane.count: " in fault, fault
    else:
        assert fault is None, fault


@RULE_PROPERTY
@given(set_size=st.sampled_from(["auto", 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16]), parity=st.integers(0, 16))
def test_erasure_parity(tmp_path_factory, set_size, parity):
    config = copy.deepcopy(BASE)
    config["storage"]["aistor"].update(set_drive_count=set_size, parity=parity)
    fault = _refused(config, tmp_path_factory.mktemp("cfg"))
    size = 15 if set_size == "auto" else set_size  # 30 servers x 24 drives: AIStor picks 15
    if parity > size // 2:
        assert fault is not None and "storage.yaml: aistor.parity: " in fault, fault
    else:
        assert fault is None, fault
