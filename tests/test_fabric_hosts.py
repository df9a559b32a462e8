"""The fabric host preparation: the preflight against sample `ibdev2netdev` and `nvidia-smi topo -m`
output, good and bad, and the prep script's names from the rail map."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .conftest import DIST

FOLDER = DIST / "one-cluster/kubeadm/ai"
GOOD_LINKS = "\n".join(f"mlx5_{i} port 1 ==> ibs{i} (Up)" for i in range(4))


def topo(near: dict[int, int]) -> str:
    """`nvidia-smi topo -m` of a node with 8 GPUs and 4 NICs; GPU g is PIX to NIC near[g], SYS else."""
    header = "\t" + "\t".join([*(f"GPU{g}" for g in range(8)), *(f"NIC{n}" for n in range(4))])
    header += "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = []
    for g in range(8):
        gpus = ["X" if h == g else "NV18" for h in range(8)]
        nics = ["PIX" if near[g] == n else "SYS" for n in range(4)]
        rows.append("\t".join([f"GPU{g}", *gpus, *nics, "0-63", "0", "N/A"]))
    legend = "\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n" + "\n".join(
        f"  NIC{n}: mlx5_{n}" for n in range(4)
    )
    return "\n".join([header, *rows]) + legend + "\n"


RAIL_MAP_TOPO = {g: g // 2 for g in range(8)}  # GPU0,1 -> mlx5_0 ... as config/fabric.yaml says


def _run(
    tmp_path: Path, script: str, links: str, topology: str, sm_ok: bool = True
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, output, ok in (
        ("ibdev2netdev", links, True),
        ("nvidia-smi", topology, True),
        ("sminfo", "sminfo: sm lid 1", sm_ok),
    ):
        (tmp_path / f"{name}.out").write_text(output)
        (bin_dir / name).write_text(f"#!/bin/sh\ncat '{tmp_path / (name + '.out')}'\nexit {0 if ok else 1}\n")
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(FOLDER / script)], env=env, capture_output=True, text=True, check=False
    )


def test_a_host_that_matches_the_rail_map_passes(tmp_path):
    result = _run(tmp_path, "fabric-preflight-gpu.sh", GOOD_LINKS, topo(RAIL_MAP_TOPO))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   mlx5_3 -> ibs3 (rail D) up" in result.stdout and "ok   GPU7 -> mlx5_3 (PIX)" in result.stdout


def test_swapped_interfaces_a_down_link_and_a_far_gpu_fail(tmp_path):
    links = GOOD_LINKS.replace("ibs0 (Up)", "ibs1 (Up)").replace(
        "mlx5_2 port 1 ==> ibs2 (Up)", "mlx5_2 port 1 ==> ibs2 (Down)"
    )
    far = {**RAIL_MAP_TOPO, 5: 0}  # GPU5 sits near mlx5_0, but the rail map puts it behind mlx5_2
    result = _run(tmp_path, "fabric-preflight-gpu.sh", links, topo(far))
    assert result.returncode == 1
    assert "FAIL mlx5_0 should be ibs0 (rail A)" in result.stdout
    assert "FAIL mlx5_2 -> ibs2 (rail C) is not up" in result.stdout
    assert "FAIL GPU5 -> mlx5_2 is SYS, not on one PCIe switch" in result.stdout


def test_no_subnet_manager_fails(tmp_path):
    result = _run(
        tmp_path, "fabric-preflight-storage.sh", "\n".join(GOOD_LINKS.splitlines()[:2]), "", sm_ok=False
    )
    assert result.returncode == 1 and "no subnet manager answers" in result.stdout
    assert "nvidia-smi" not in result.stdout  # storage nodes have no GPUs to check


def test_the_prep_script_names_interfaces_from_the_rail_map(site):
    text = (FOLDER / "fabric-prep-gpu.sh").read_text()
    for nic in site.fabric.nics["gpu"]:
        assert f'RESULT=="{nic.name}", NAME="{nic.netdev}"' in text
    assert "LimitMEMLOCK=infinity" in text and "ib_ipoib" in text
