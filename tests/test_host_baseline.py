"""The host baseline scripts, run as a host runs them: the preflight before the join against a host
recorded as its kernel and tools show it (os-release, procfs, sysfs, and `uname`, `dpkg-query`,
`chronyc -c tracking`, `lspci -vvv` answering from recordings), a good one and one with every point
off; the prep script's versions follow config (Kubernetes' from versions.yaml)."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest

from sitegen.compose.host_baseline import kubernetes_package_version, prep_script
from sitegen.model import load_site
from sitegen.model.layout import resolve

from .conftest import DIST, PINS, edit_yaml

PAUSE = "{repository}:{tag}".format(**PINS["images"]["pause"])

FOLDER = DIST / "one-cluster/kubeadm/ai"
SWITCH = "00:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)"
ACS_CAP = "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+"
ACS_OFF = "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
ACS_ON = "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
SYNCED = "C0A80001,ntp1.hpc.example.internal,3,1764800000.1,0.000012345,-0.000001,0.00002,-1.2,0.001,0.05,0.0012,0.0003,64.4,Normal"
ADRIFT = "C0A80001,ntp1.hpc.example.internal,3,1764800000.1,-0.250000000,-0.000001,0.00002,-1.2,0.001,0.05,0.0012,0.0003,64.4,Normal"
UNSYNCED = "00000000,,0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,Not synchronised"


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _host(tmp_path: Path, site, **off: str) -> dict[str, str]:
    """A gpu host as the baseline wants it, but for the points named in `off`."""
    hosts = site.hosts
    firmware = hosts.firmware["dell-xe9780"]
    kube = kubernetes_package_version(site)
    versions = {"containerd.io": hosts.packages.containerd, "kubelet": kube, "kubeadm": kube, "kubectl": kube}
    versions.update({p: "1.0" for p in hosts.packages.others})
    if "kubelet" in off:
        versions["kubelet"] = off["kubelet"]
    if "missing" in off:
        versions.pop(off["missing"])
    root = tmp_path / "host"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text(
        f'ID={hosts.os.id}\nVERSION_ID="{off.get("os", hosts.os.version_id)}"\n'
    )
    proc = root / "proc"
    for key, value in {
        **hosts.kernel_settings,
        **({"net.ipv4.ip_forward": off["forward"]} if "forward" in off else {}),
    }.items():
        path = proc / "sys" / key.replace(".", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    swaps = "Filename\tType\tSize\tUsed\tPriority\n" + (
        "/swap.img\tfile\t8388604\t0\t-2\n" if "swap" in off else ""
    )
    (proc / "swaps").write_text(swaps)
    (proc / "cmdline").write_text(
        off.get("cmdline", "BOOT_IMAGE=/vmlinuz ro " + " ".join(firmware.kernel_args)) + "\n"
    )
    sys = root / "sys"
    for module in hosts.modules:
        (sys / "module" / module).mkdir(parents=True)
    (sys / "class/dmi/id").mkdir(parents=True)
    (sys / "class/dmi/id/bios_version").write_text(off.get("bios", firmware.bios) + "\n")
    for i in range(4 - int("rail" in off)):  # the NDR rails, then a 100GbE ConnectX on Ethernet
        ib = sys / "class/infiniband" / f"mlx5_{i}"
        (ib / "ports/1").mkdir(parents=True)
        (ib / "ports/1/link_layer").write_text("InfiniBand\n")
        (ib / "fw_ver").write_text((off.get("nic", firmware.nic) if i == 3 else firmware.nic) + "\n")
    if "secure_boot" in off:  # efivarfs: attributes, then the value
        efivars = sys / "firmware/efi/efivars"
        efivars.mkdir(parents=True)
        (efivars / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(b"\x06\x00\x00\x00\x01")
    ethernet = sys / "class/infiniband/mlx5_4"
    (ethernet / "ports/1").mkdir(parents=True)
    (ethernet / "ports/1/link_layer").write_text("Ethernet\n")
    (ethernet / "fw_ver").write_text("28.45.1200\n")  # a ConnectX-7 of its own firmware line
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "uname", f"echo {off.get('kernel', hosts.os.kernel)}\n")
    cases = "".join(f'  "{p}") printf %s "{v}" ;;\n' for p, v in versions.items())
    _stub(bin_dir, "dpkg-query", 'for p; do :; done\ncase "$3" in\n  *Status*) s=1 ;; esac\n'
          f'case "$p" in\n{cases}  *) exit 1 ;;\nesac\n'
          '[ -n "${s:-}" ] && printf "install ok installed"\nexit 0\n')  # fmt: skip
    _stub(bin_dir, "chronyc", f"echo '{off.get('chrony', SYNCED)}'\n")
    lspci = "\n".join(
        [SWITCH, "\tCapabilities: [220 v1] Access Control Services", ACS_CAP, off.get("acs", ACS_OFF)]
    )
    _stub(bin_dir, "lspci", f"cat <<'EOF'\n{lspci}\nEOF\n")
    _stub(bin_dir, "crictl", "exit 1\n" if "cri" in off else "echo '{}'\n")
    config = (FOLDER / "containerd-gpu.toml").read_text()
    for field, value in (
        ("cgroup", "SystemdCgroup = false"),
        ("sandbox", "sandbox = 'registry.k8s.io/pause:3.9'"),
    ):
        if field in off:
            config = re.sub(rf"^  {value.split(' =')[0]} = .*$", "  " + value, config, flags=re.M)
    _stub(bin_dir, "containerd", f"[ \"$*\" = 'config dump' ] || exit 2\ncat <<'EOF'\n{config}EOF\n")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "SYSFS": str(sys), "PROCFS": str(proc),
            "OS_RELEASE": str(root / "etc/os-release")}  # fmt: skip


def _preflight(env: dict[str, str], pool: str = "gpu") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(FOLDER / f"host-preflight-{pool}.sh")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_host_built_to_the_baseline_passes(tmp_path, site):
    result = _preflight(_host(tmp_path, site))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout and result.stdout.rstrip().endswith("host baseline passed")
    for line in ("ok   kernel 6.8.0-90-generic", f"ok   kubelet {kubernetes_package_version(site)}",
                 "ok   PCIe ACS redirect off", "ok   kernel argument iommu=pt", "ok   mlx5_3 firmware", "skip mlx5_4: on Ethernet, not an NDR rail", "ok   4 NDR rail NICs", "ok   Secure Boot off",
                 "ok   kernel argument intel_iommu=on", "ok   containerd answers on the CRI",
                 "ok   runc on the systemd cgroup driver", f"ok   sandbox image {PAUSE}"):  # fmt: skip
        assert line in result.stdout


@pytest.mark.parametrize(
    ("off", "said"),
    [
        ({"swap": "on"}, "FAIL 1 swap device(s) on"),
        ({"kernel": "6.8.0-31-generic"}, "FAIL kernel is 6.8.0-31-generic, the baseline 6.8.0-90-generic"),
        ({"os": "22.04"}, "FAIL os is ubuntu 22.04, the baseline ubuntu 24.04"),
        ({"kubelet": "1.34.2-1.1"}, "FAIL kubelet is 1.34.2-1.1, the baseline"),
        ({"missing": "pciutils"}, "FAIL pciutils is not installed"),
        ({"forward": "0"}, "FAIL net.ipv4.ip_forward is 0, the baseline 1"),
        ({"bios": "1.0.0"}, "FAIL BIOS is 1.0.0, the baseline 1.3.4"),
        ({"nic": "40.40.1000"}, "FAIL mlx5_3 firmware is 40.40.1000, the baseline 40.46.1006"),
        ({"rail": "missing"}, "FAIL 3 InfiniBand NICs report their firmware, the hardware has 4"),
        (
            {"secure_boot": "on"},
            "FAIL Secure Boot is on: the GPU Operator's driver container builds unsigned",
        ),
        ({"cmdline": "BOOT_IMAGE=/vmlinuz ro intel_iommu=on"}, "FAIL kernel argument iommu=pt is missing"),
        ({"acs": ACS_ON}, "FAIL PCIe 00:01.0: ACS redirect on"),
        ({"chrony": UNSYNCED}, "FAIL time: chrony is Not synchronised"),
        ({"chrony": ADRIFT}, "FAIL time is 250.0 ms off ntp1.hpc.example.internal, more than 100"),
        ({"cri": "off"}, "FAIL containerd does not answer on the CRI"),
        ({"cgroup": "cgroupfs"}, "FAIL runc is not on the systemd cgroup driver, the kubelet's"),
        ({"sandbox": "3.9"}, f"FAIL the sandbox image is not {PAUSE}"),
    ],
)
def test_each_point_off_the_baseline_fails_the_host(tmp_path, site, off, said):
    result = _preflight(_host(tmp_path, site, **off))
    assert result.returncode == 1, result.stdout + result.stderr
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith(said), result.stdout
    assert result.stdout.rstrip().endswith("host baseline FAILED: fix the lines above before the join")


def test_pools_check_only_their_hardwares_firmware(tmp_path, site):
    """Infra hosts (no NDR port, no GPUs) check their BIOS, no RDMA firmware, kernel argument or ACS."""
    text = (FOLDER / "host-preflight-infra.sh").read_text()
    assert "bios_version" in text and "fw_ver" not in text and "ACSCtl" not in text and "cmdline" not in text
    storage = (FOLDER / "host-preflight-storage.sh").read_text()
    assert "fw_ver" in storage and "ACSCtl" not in storage


def test_every_baseline_script_parses():
    scripts = sorted(DIST.glob("*/kubeadm/*/host-*.sh"))
    assert len(scripts) >= 2 * 5
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_the_prep_script_follows_config(config_copy):
    edit_yaml(config_copy, "versions.yaml", lambda d: d.update(kubernetes="v1.36.1"))
    edit_yaml(
        config_copy,
        "hosts.yaml",
        lambda d: d["firmware"]["dell-xe9780"].update(kernel_args=["iommu=pt", "pci=realloc"]),
    )
    site = load_site(config_copy)
    gpu = next(p for c in resolve(site, "one-cluster").clusters for p in c.pools if p.name == "gpu")
    text = prep_script(site, gpu)
    assert "kubelet=1.36.1-1.1 kubeadm=1.36.1-1.1 kubectl=1.36.1-1.1" in text
    assert 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt pci=realloc"' in text
    assert "server ntp1.hpc.example.internal iburst" in text


def test_firmware_of_a_hardware_model_nobody_has_is_a_config_error(config_copy):
    from .conftest import run_sitegen

    edit_yaml(config_copy, "hosts.yaml", lambda d: d["firmware"].update({"dell-r760": {"bios": "1.0"}}))
    result = run_sitegen("plan", "--config", config_copy)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith(
        "hosts.yaml: firmware.dell-r760: no hardware model 'dell-r760' in hardware.yaml"
    )


def test_the_runbook_runs_the_baseline_of_every_pool_before_anything_else():
    for variant in ("one-cluster", "two-cluster"):
        runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        first = runbook.split("### 1. ", 1)[1].split("\n### 2. ", 1)[0]
        assert first.startswith("The host baseline")
        named = re.findall(r"^bash dist/(\S+/host-(prep|preflight)-\S+\.sh)", first, flags=re.M)
        scripts = {str(p.relative_to(DIST)) for p in DIST.glob(f"{variant}/kubeadm/*/host-*.sh")}
        assert {f for f, _ in named} == scripts
        stages = [stage for _, stage in named]
        assert stages == sorted(stages, key=lambda s: s != "prep")  # every prep, the reboot, every preflight
        assert first.index("reboot") < first.index("host-preflight-")


def test_containerd_is_configured_for_the_kubelet(site):
    """Per pool: the CRI required, runc on the kubelet's cgroup driver, kubeadm's sandbox image pinned,
    the registry mirrors read; the GPU pool imports the toolkit's drop-ins; host-prep writes exactly
    this file and restarts containerd; the kernel is the boot default and held."""
    import tomllib

    import yaml

    (kubelet,) = [
        d
        for d in yaml.safe_load_all((FOLDER / "init-cp01.yaml").read_text())
        if d and d.get("kind") == "KubeletConfiguration"
    ]
    for pool in ("control-plane", "infra", "compute", "gpu"):
        text = (FOLDER / f"containerd-{pool}.toml").read_text()
        config = tomllib.loads(text)
        assert config["version"] == 3 and config["required_plugins"] == ["io.containerd.grpc.v1.cri"]
        plugins = config["plugins"]
        runc = plugins["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]["options"]
        assert runc["SystemdCgroup"] is (kubelet["cgroupDriver"] == "systemd")
        pause = site.versions.images["pause"]
        assert (
            plugins["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"]
            == f"{pause.repository}:{pause.tag}"
        )
        assert plugins["io.containerd.cri.v1.images"]["registry"]["config_path"] == "/etc/containerd/certs.d"
        assert ("imports" in config) is (pool == "gpu")
        prep = (FOLDER / f"host-prep-{pool}.sh").read_text()
        body = text.split("\n", 3)[3]  # after the generated header
        assert f"cat > /etc/containerd/config.toml <<'EOF'\n{body}EOF\nsystemctl restart containerd" in prep
        assert (
            f"apt-mark hold containerd.io kubelet kubeadm kubectl linux-image-{site.hosts.os.kernel}" in prep
        )
        assert f'GRUB_DEFAULT="Advanced options for Ubuntu>Ubuntu, with Linux {site.hosts.os.kernel}"' in prep
