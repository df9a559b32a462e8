"""Node labels of every pool (put on joined nodes by a Job, taints verified) and pool placement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from constructs.node_labels import LABEL_SCRIPT, host_lines
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
    tmp_path: Path, nodes: dict[str, str | None], lines: str
) -> subprocess.CompletedProcess[str]:
    """The Job's script against a fake API: `nodes` maps a joined host to the Node JSON it returns."""
    (tmp_path / "sa").mkdir()
    (tmp_path / "sa" / "token").write_text("t")
    (tmp_path / "nodes.txt").write_text(lines)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for host, body in nodes.items():
        (tmp_path / f"{host}.json").write_text(body or "")
    # curl ... -o FILE -w '%{http_code}' -X PATCH ... URL -d PATCH: records the patch, answers per host
    (bin_dir / "curl").write_text(
        """#!/bin/sh
out=""; url=""; data=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift ;; -d) data="$2"; shift ;; https://*) url="$1" ;; esac; shift
done
host=${url##*/}
echo "$host $data" >> "$FAKE/patches"
if [ -f "$FAKE/$host.json" ]; then cp "$FAKE/$host.json" "$out"; printf 200; else printf 404; fi
"""
    )
    (bin_dir / "curl").chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "NODE_LIST": str(tmp_path / "nodes.txt"),
        "SA_DIR": str(tmp_path / "sa"),
        "API_SERVER": "https://api.test",
    }
    return subprocess.run(
        ["/bin/sh", "-c", LABEL_SCRIPT], env=env, capture_output=True, text=True, check=False
    )


def test_the_labeler_labels_joined_nodes_skips_the_others_and_checks_taints(site, tmp_path):
    layout = resolve(site, "one-cluster").clusters[0]
    gpu, infra = layout.pool("gpu"), layout.pool("infra")
    tainted = '{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule","timeAdded":null}]}}'
    lines = host_lines([gpu, infra])
    result = _run_labeler(tmp_path, {"gpu01": tainted, "infra01": "{}"}, lines)
    assert result.returncode == 0, result.stderr
    assert "labeled 2 nodes; 15 listed hosts have not joined; 0 taints missing" in result.stdout
    patches = dict(line.split(" ", 1) for line in (tmp_path / "patches").read_text().splitlines())
    assert json.loads(patches["gpu01"]) == {"metadata": {"labels": gpu.labels}}
    # a GPU node that came up without its taint: the Job fails and says which
    (tmp_path / "patches").unlink()
    for f in ("sa", "bin"):
        shutil.rmtree(tmp_path / f)
    result = _run_labeler(tmp_path, {"gpu01": "{}", "infra01": "{}"}, lines)
    assert result.returncode == 1
    assert "gpu01: lacks its pool's taint" in result.stderr and "1 taints missing" in result.stdout


@pytest.mark.parametrize(
    ("pool", "selector", "tolerations"),
    [
        ("infra", {"node-role.kubernetes.io/infra": "true"}, ()),
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
