"""The local cache's volume group script, run as a GPU host runs it: against a recorded /sys/block (NVMe
devices with their size, partitions and holders) and blkid, pvcreate, vgcreate and vgs answering as
stubs that log their calls. It takes the empty drives of the model's size, whatever their names."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from .conftest import DIST

SCRIPT = DIST / "one-cluster/kubeadm/ai/local-cache-gpu.sh"
CACHE = 15_360_000_000_000  # config/hardware.yaml: dell-xe9780, one drive of 15360 GB
BOOT = 960_000_000_000  # an NVMe boot device (BOSS-N1)


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _host(tmp_path: Path, drives: dict[str, int], *, partitioned=(), signed=(), held=(), vg=False):
    """/sys/block with `drives` (name: bytes), and the LVM and blkid tools; returns the environment and
    the log of the calls that change a drive."""
    for name, size in drives.items():
        block = tmp_path / "sys/block" / name
        (block / "holders").mkdir(parents=True)
        (block / "size").write_text(f"{size // 512}\n")
        if name in partitioned:
            (block / f"{name}p1").mkdir()
        if name in held:
            (block / "holders/dm-0").mkdir()
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    found = " | ".join(f"/dev/{name}" for name in signed) or "/dev/none"
    _stub(
        bin_dir,
        "blkid",
        f'for a; do d=$a; done\ncase "$d" in\n  {found}) echo xfs; exit 0 ;;\nesac\nexit 2\n',
    )
    _stub(bin_dir, "vgs", "exit 0\n" if vg else "exit 5\n")
    for tool in ("pvcreate", "vgcreate"):
        _stub(bin_dir, tool, f'echo "{tool} $*" >> {log}\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SYSFS": str(tmp_path / "sys")}
    return env, log


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("cache, boot", [("nvme1n1", "nvme0n1"), ("nvme0n1", "nvme1n1")])
def test_the_empty_drive_of_the_models_size_is_taken_whatever_its_name(tmp_path, cache, boot):
    """Enumeration order is not stable: the cache drive may come first, the boot device second (a fixed
    /dev/nvme1n1 would then be the OS disk)."""
    env, log = _host(tmp_path, {boot: BOOT, cache: CACHE + 2_991_415_296}, partitioned=[boot])
    result = _run(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert log.read_text().splitlines() == [f"pvcreate /dev/{cache}", f"vgcreate nvme-cache /dev/{cache}"]
    assert f"skip /dev/{boot}: 960 GB, not 15360" in result.stdout


@pytest.mark.parametrize(
    "trouble, said",
    [
        ({"signed": ["nvme1n1"]}, "skip /dev/nvme1n1: holds xfs"),
        ({"partitioned": ["nvme1n1"]}, "skip /dev/nvme1n1: partitioned"),
        ({"held": ["nvme1n1"]}, "skip /dev/nvme1n1: in use by dm-0"),
    ],
)
def test_a_drive_that_holds_something_is_never_written(tmp_path, trouble, said):
    env, log = _host(tmp_path, {"nvme0n1": BOOT, "nvme1n1": CACHE}, **trouble)
    result = _run(env)
    assert result.returncode == 1 and said in result.stdout
    assert "FAIL found 0 empty NVMe drive(s) of 15360 GB, Dell PowerEdge XE9780 has 1" in result.stdout
    assert not log.exists()  # no pvcreate, no vgcreate


def test_more_empty_drives_than_the_model_has_is_a_question_not_a_guess(tmp_path):
    env, log = _host(tmp_path, {"nvme0n1": CACHE, "nvme1n1": CACHE})
    result = _run(env)
    assert result.returncode == 1 and "FAIL found 2 empty" in result.stdout and not log.exists()


def test_a_second_run_leaves_the_volume_group_as_it_is(tmp_path):
    env, log = _host(tmp_path, {"nvme0n1": CACHE}, vg=True)
    result = _run(env)
    assert result.returncode == 0 and "volume group nvme-cache exists" in result.stdout and not log.exists()


def test_no_runbook_names_a_drive_by_its_device_name():
    """The day-1 step and a rebuilt host's both run the script: no command takes a fixed /dev/nvme*."""
    for runbook in sorted(DIST.glob("*/bootstrap/RUNBOOK.md")):
        text = runbook.read_text()
        assert "/dev/nvme" not in text, runbook
        assert text.count("local-cache-gpu.sh   # on every gpu host") >= 2, runbook  # day 1 and a rebuild
