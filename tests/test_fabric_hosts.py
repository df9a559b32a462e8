"""The fabric host scripts, run as the hosts run them: the preflight before the join against a sysfs
tree as the kernel shows it (no OFED tool, no GPU driver yet), and the GPU topology check once the GPU
Operator's driver runs, with `nvidia-smi topo -m` from the driver's root, against recorded output."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import DIST

FOLDER = DIST / "one-cluster/kubeadm/ai"
ACTIVE, INIT, DOWN = "4: ACTIVE", "2: INIT", "1: DOWN"


def sysfs(root: Path, ports: dict[str, tuple[str, str]]) -> Path:
    """/sys/class/infiniband as a ConnectX host shows it: device -> (its IPoIB interface, port state)."""
    for dev, (netdev, state) in ports.items():
        ib = root / "class" / "infiniband" / dev
        (ib / "device" / "net" / netdev).mkdir(parents=True)
        (ib / "ports" / "1").mkdir(parents=True)
        (ib / "ports" / "1" / "state").write_text(state + "\n")
    return root


GPU_PORTS = {f"mlx5_{i}": (f"ibs{i}", ACTIVE) for i in range(4)}


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


def _preflight(
    tmp_path: Path, script: str, ports: dict[str, tuple[str, str]]
) -> subprocess.CompletedProcess[str]:
    """The preflight with nothing but the shell's tools and a recorded sysfs: an OFED tool or the GPU
    driver would not be found (the PATH holds only what a fresh host has)."""
    env = {"PATH": "/usr/bin:/bin", "SYSFS": str(sysfs(tmp_path / "sys", ports))}
    return subprocess.run(
        ["bash", str(FOLDER / script)], env=env, capture_output=True, text=True, check=False
    )


def test_a_host_that_matches_the_rail_map_passes(tmp_path):
    result = _preflight(tmp_path, "fabric-preflight-gpu.sh", GPU_PORTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   mlx5_3 -> ibs3 (rail D) active" in result.stdout
    text = (FOLDER / "fabric-preflight-gpu.sh").read_text()
    assert "nvidia-smi" not in text and "ibdev2netdev" not in text and "sminfo" not in text


def test_swapped_interfaces_a_down_link_and_no_subnet_manager_fail(tmp_path):
    ports = {**GPU_PORTS, "mlx5_0": ("ibs1", ACTIVE), "mlx5_2": ("ibs2", DOWN), "mlx5_3": ("ibs3", INIT)}
    result = _preflight(tmp_path, "fabric-preflight-gpu.sh", ports)
    assert result.returncode == 1
    assert "FAIL mlx5_0 should carry ibs0 (rail A): it has ibs1" in result.stdout
    assert "FAIL mlx5_2 -> ibs2 (rail C) is 1: DOWN: the link is not up" in result.stdout
    assert "FAIL mlx5_3 -> ibs3 (rail D) is 2: INIT: no subnet manager configured the port" in result.stdout


def test_a_missing_device_fails(tmp_path):
    ports = {d: p for d, p in GPU_PORTS.items() if d != "mlx5_1"}
    result = _preflight(tmp_path, "fabric-preflight-gpu.sh", ports)
    assert result.returncode == 1 and "FAIL mlx5_1 (rail B): no such RDMA device" in result.stdout


def test_storage_hosts_check_their_two_rails(tmp_path):
    ports = {"mlx5_0": ("ibs0", ACTIVE), "mlx5_1": ("ibs1", ACTIVE)}
    result = _preflight(tmp_path, "fabric-preflight-storage.sh", ports)
    assert result.returncode == 0, result.stdout
    assert not (FOLDER / "fabric-topology-storage.sh").exists()  # no GPUs to check


def _topology(tmp_path: Path, output: str, *, on_path: bool = False) -> subprocess.CompletedProcess[str]:
    """The topology check with the GPU Operator's driver: `nvidia-smi` only inside the driver's root
    (a `chroot` that answers for that root alone), or on the PATH where a host driver is installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "topo.out").write_text(output)
    root = tmp_path / "driver"
    if on_path:
        (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\ncat '{tmp_path / 'topo.out'}'\n")
    else:
        (bin_dir / "chroot").write_text(
            f'#!/bin/sh\n[ "$1" = "{root}" ] && [ "$2 $3 $4" = "nvidia-smi topo -m" ] || '
            f"{{ echo \"chroot: $*\" >&2; exit 127; }}\ncat '{tmp_path / 'topo.out'}'\n"
        )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "DRIVER_ROOT": str(root)}
    return subprocess.run(
        ["bash", str(FOLDER / "fabric-topology-gpu.sh")], env=env, capture_output=True, text=True, check=False
    )


def test_the_topology_check_reads_nvidia_smi_from_the_drivers_root(tmp_path):
    result = _topology(tmp_path, topo(RAIL_MAP_TOPO))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   GPU7 -> mlx5_3 (PIX)" in result.stdout
    assert _topology(tmp_path, topo(RAIL_MAP_TOPO), on_path=True).returncode == 0


def test_a_far_gpu_fails_the_topology_check(tmp_path):
    far = {**RAIL_MAP_TOPO, 5: 0}  # GPU5 sits near mlx5_0, but the rail map puts it behind mlx5_2
    result = _topology(tmp_path, topo(far))
    assert result.returncode == 1
    assert "FAIL GPU5 -> mlx5_2 is SYS, not on one PCIe switch" in result.stdout


def test_the_prep_script_names_interfaces_from_the_rail_map(site):
    text = (FOLDER / "fabric-prep-gpu.sh").read_text()
    for nic in site.fabric.nics["gpu"]:
        assert f'RESULT=="{nic.name}", NAME="{nic.netdev}"' in text
    assert "LimitMEMLOCK=infinity" in text and "ib_ipoib" in text
