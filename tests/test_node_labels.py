"""Node labels of every pool (put on joined nodes by a Job, taints verified) and pool placement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from constructs.node_labels import LABEL_SCRIPT, host_lines
from sitegen.check.bringup.apiserver import FakeApiServer, fake_apiserver, node
from sitegen.model import resolve

SEED_LABELS = {
    "gpu": {
        "node-role.kubernetes.io/gpu": "true",
        "accelerator": "nvidia-b300",
        "gpu-count": "8",
        "gpu-platform": "hgx-b300",
        "network-fabric": "ndr400",
        "local-storage": "nvme",
    },
    "storage": {
        "node-role.kubernetes.io/aistor": "true",
        "storage": "aistor",
        "disk": "nvme-gen5",
        "rdma": "true",
    },
}


def _lines(site, variant, cluster) -> dict[str, tuple[dict, list[str]]]:
    layout = next(c for c in resolve(site, variant).clusters if c.name == cluster)
    out = {}
    for line in host_lines(list(layout.pools)).splitlines():
        host, patch, *taints = line.split(" ")
        out[host] = (json.loads(patch)["metadata"]["labels"], taints)
    return out


@pytest.mark.parametrize("pool", ["gpu", "storage"])
def test_every_host_is_listed_with_exactly_the_seed_labels(site, pool):
    lines = _lines(site, "one-cluster", "ai")
    assert len(lines) == sum(p.count for p in site.pools.values())
    hosts = [h.name for h in site.pools[pool].hosts]
    assert all(lines[h][0] == SEED_LABELS[pool] for h in hosts)
    value = "gpu" if pool == "gpu" else "aistor"
    assert all(lines[h][1] == [f'{{"key":"dedicated","value":"{value}","effect":"NoSchedule"'] for h in hosts)


def test_no_node_object_is_ever_in_git(docs):
    """A Node synced before its host joins makes the kubelet skip --register-with-taints."""
    assert not [d.file for d in docs if d.kind == "Node"]


def _run_labeler(
    api: FakeApiServer, lines: str, folder: Path, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The Job's script, with the real curl, against a fake API server that answers as the real one."""
    sa = folder / "sa"
    sa.mkdir(exist_ok=True)
    (sa / "token").write_text(token or api.token)
    shutil.copyfile(api.ca, sa / "ca.crt")
    (folder / "nodes.txt").write_text(lines)
    env = {
        "PATH": os.environ["PATH"],
        "TMPDIR": str(folder),
        "NODE_LIST": str(folder / "nodes.txt"),
        "SA_DIR": str(sa),
        "API_SERVER": api.url,
    }
    return subprocess.run(
        ["/bin/sh", "-c", LABEL_SCRIPT], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def test_the_labeler_labels_joined_nodes_skips_the_others_and_checks_taints(site, tmp_path):
    """The API server pretty-prints for curl: the taint check must read the Node whatever its layout."""
    layout = resolve(site, "one-cluster").clusters[0]
    gpu, infra = layout.pool("gpu"), layout.pool("infra")
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    lines = host_lines([gpu, infra])
    with fake_apiserver(tmp_path / "api") as api:
        infra_taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
        api.nodes = {"gpu01": node("gpu01", taints=[taint]), "infra01": node("infra01", taints=[infra_taint])}
        result = _run_labeler(api, lines, tmp_path)
        assert result.returncode == 0, result.stderr
        assert "labeled 2 nodes; 15 listed hosts have not joined; 0 taints missing" in result.stdout
        assert {
            k: v for k, v in api.nodes["gpu01"]["metadata"]["labels"].items() if k in gpu.labels
        } == gpu.labels
        assert "gpu02" not in api.nodes  # a host that has not joined stays absent: PATCH never creates
        assert all(agent.startswith("curl/") for _, _, agent, _ in api.requests)

        # a GPU node that came up without its taint: the Job fails and says which
        api.nodes["gpu01"] = node("gpu01")
        result = _run_labeler(api, lines, tmp_path)
        assert result.returncode == 1
        assert "gpu01: lacks its pool's taint" in result.stderr and "1 taints missing" in result.stdout


def test_the_labeler_stops_on_an_answer_it_does_not_expect(site, tmp_path):
    """A wrong token (401) is not a host that has not joined (404): the Job fails and says so."""
    lines = host_lines([resolve(site, "one-cluster").clusters[0].pool("infra")])
    with fake_apiserver(tmp_path / "api") as api:
        api.nodes = {"infra01": node("infra01")}
        result = _run_labeler(api, lines, tmp_path, token="expired")
    assert result.returncode == 1 and "PATCH answered HTTP 401" in result.stderr


@pytest.mark.parametrize(
    ("pool", "selector", "tolerations"),
    [
        (
            "infra",
            {"node-role.kubernetes.io/infra": "true"},
            ({"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},),
        ),
        (
            "gpu",
            {"node-role.kubernetes.io/gpu": "true"},
            ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},),
        ),
        (
            "storage",
            {"node-role.kubernetes.io/aistor": "true"},
            ({"key": "dedicated", "operator": "Equal", "value": "aistor", "effect": "NoSchedule"},),
        ),
        (
            "control-plane",
            {"node-role.kubernetes.io/control-plane": ""},
            ({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},),
        ),
    ],
)
def test_pool_placement(site, pool, selector, tolerations):
    placement = resolve(site, "one-cluster").clusters[0].pool(pool).placement
    assert placement.node_selector == selector
    assert placement.tolerations == tolerations


def test_two_cluster_variant_splits_the_pools(site):
    clusters = {c.name: c for c in resolve(site, "two-cluster").clusters}
    assert {p.name: len(p.hosts) for p in clusters["ai"].pools} == {
        "control-plane": 5,
        "infra": 5,
        "compute": 47,
        "gpu": 12,
    }
    assert {p.name: len(p.hosts) for p in clusters["aistor"].pools} == {"control-plane": 3, "storage": 30}
    carved = [h.name for h in clusters["aistor"].control_plane.hosts]
    assert carved == ["cmp48", "cmp49", "cmp50"]
    assert not set(carved) & {h.name for h in clusters["ai"].pool("compute").hosts}


def test_a_process_that_ends_without_exit_handlers_leaves_no_key_behind(tmp_path):
    """Put-back: the stand-in's CA and key lived in a folder of the process, removed by an exit handler,
    which a process pool's worker never runs: every parallel bring-up left a CA's key in TMPDIR."""
    import os
    import subprocess
    import sys

    code = (
        "import os\nfrom pathlib import Path\nfrom sitegen.check.bringup.apiserver import fake_apiserver\n"
        "with fake_apiserver(Path(os.environ['API'])):\n    pass\nos._exit(0)\n"
    )
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "API": str(tmp_path / "api")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    # only our own names: jsii's folders, made on import, are jsii's (Node may still be removing them)
    assert [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("sitegen-")] == []
    assert sorted(p.name for p in (tmp_path / "api").iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
