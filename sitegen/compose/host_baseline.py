"""The host baseline per pool (config/hosts.yaml), as two scripts beside the kubeadm configs:

- `host-prep-<pool>.sh` applies what a script can: swap off, kernel modules and settings, chrony
  against the site's servers, the packages at their versions (Kubernetes' at versions.yaml's release)
  held against upgrades, containerd's configuration (containerd.py: the package's own disables the
  CRI), the pinned kernel made GRUB's default and held, and the kernel arguments of the pool's
  hardware; on the control plane, the hourly timer of the PKI archive. A reboot follows it (kernel,
  arguments).
- `host-preflight-<pool>.sh` checks every point of the baseline on the host, the firmware and PCIe
  settings no script applies included (BIOS and ConnectX firmware levels, ACS redirect on the PCIe
  switches, Secure Boot off where the GPU driver is built on the node), one line per point; its exit status says whether the host may join.

The preflight reads the kernel's files (sysfs, procfs, os-release, overridable for the tests) and the
tools the baseline installs (dpkg-query, chronyc, lspci, crictl, containerd), never a GPU or OFED tool: the GPU driver and
the NIC stack arrive later, with their operators (fabric-topology-<pool>.sh checks the GPUs then).
"""

from __future__ import annotations

import shlex

from constructs import etcd_backup
from sitegen.compose import containerd
from sitegen.compose.writer import OutputFile
from sitegen.model import ClusterLayout, PoolLayout, Site, paths

HELD = ("containerd.io", "kubelet", "kubeadm", "kubectl")

PREP = """\
set -eu
. /etc/os-release
if [ "$ID $VERSION_ID" != {os} ]; then
  echo "this host runs $ID $VERSION_ID; the baseline is {os_text}: reinstall it from the site's image"; exit 1
fi
# swap off now and at boot: the kubelet does not start with swap on (failSwapOn)
swapoff -a
sed -i.sitegen '/^[^#].*[[:space:]]swap[[:space:]]/s/^/#/' /etc/fstab
systemctl mask swap.target
# kernel modules and settings
printf '%s\\n' {modules} > /etc/modules-load.d/90-sitegen-baseline.conf
for module in {modules}; do modprobe "$module"; done
cat > /etc/sysctl.d/90-sitegen-baseline.conf <<'EOF'
{sysctls}EOF
sysctl --system >/dev/null
# packages at the baseline's versions, from the site's mirror (the OS image's apt sources, and the
# Kubernetes repository of the running minor), held
echo {kubernetes_source} > /etc/apt/sources.list.d/kubernetes.list
apt-get update
apt-get install -y --allow-downgrades --allow-change-held-packages {packages}
apt-mark hold {held} linux-image-{kernel}
# containerd: the CRI on (the package's config.toml disables it), runc on the kubelet's cgroup driver,
# the sandbox image pinned, images through the registry mirrors of {certs_d}
install -d -m 0755 /etc/containerd {certs_d} {drop_ins}
cat > {config_path} <<'EOF'
{containerd}EOF
systemctl restart containerd
# the pinned kernel boots by default, whatever newer kernel the image carries
cat > /etc/default/grub.d/80-sitegen-kernel.cfg <<'EOF'
GRUB_DEFAULT="Advanced options for Ubuntu>Ubuntu, with Linux {kernel}"
EOF
update-grub
# time: chrony against the site's servers only
mkdir -p /etc/chrony/sources.d
cat > /etc/chrony/sources.d/sitegen.sources <<'EOF'
{time}EOF
sed -i 's/^\\(pool\\|server\\) /# sitegen: \\1 /' /etc/chrony/chrony.conf
systemctl enable --now chrony
chronyc reload sources
{kernel_args}{pki}echo "baseline applied; reboot (kernel {kernel}), then run host-preflight-{pool}.sh"
"""

# The control plane's PKI archive (constructs/etcd_backup.py): made here, hourly, with the host's tar and
# openssl, so the CA keys never enter a container; skipped until the second-target step has put the
# recipient certificate on the host.
PKI_ARCHIVE = """\
# the PKI archive of the second backup target: the CA keys stay on the host
install -d -m 0755 {archive_dir}
cat > {archiver} <<'EOF'
{script}EOF
chmod 0700 {archiver}
cat > /etc/systemd/system/{unit}.service <<'EOF'
[Unit]
Description=Encrypt kubeadm's CAs and the encryption configuration for the second backup target
ConditionPathExists={recipient}

[Service]
Type=oneshot
ExecStart={archiver}
EOF
cat > /etc/systemd/system/{unit}.timer <<'EOF'
[Unit]
Description=The PKI archive, hourly

[Timer]
OnCalendar=hourly
RandomizedDelaySec=300
Persistent=true

[Install]
WantedBy=timers.target
EOF
systemctl daemon-reload
systemctl enable --now {unit}.timer
"""

KERNEL_ARGS = """\
# kernel arguments of the pool's hardware
cat > /etc/default/grub.d/90-sitegen.cfg <<'EOF'
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {args}"
EOF
update-grub
"""

PREFLIGHT = """\
set -u
# Host baseline of pool {pool} (config/hosts.yaml; {model})
sys=${{SYSFS:-/sys}}
proc=${{PROCFS:-/proc}}
release=${{OS_RELEASE:-/etc/os-release}}
fail=0
bad() {{ echo "FAIL $*"; fail=1; }}
ok() {{ echo "ok   $*"; }}
os=$(. "$release"; echo "$ID $VERSION_ID")
[ "$os" = {os} ] && ok "os $os" || bad "os is $os, the baseline {os_text}"
kernel=$(uname -r)
[ "$kernel" = {kernel} ] && ok "kernel $kernel" || bad "kernel is $kernel, the baseline {kernel}: boot it"
swaps=$(awk 'NR > 1' "$proc/swaps" | wc -l)
[ "$swaps" = 0 ] && ok "no swap" || bad "$swaps swap device(s) on: the kubelet will not start"
while read -r package version; do
  found=$(dpkg-query -W -f '${{Version}}' "$package" 2>/dev/null) || found="(not installed)"
  [ "$found" = "$version" ] && ok "$package $found" || bad "$package is $found, the baseline $version"
done <<EOF
{versions}
EOF
for package in {others}; do
  dpkg-query -W -f '${{Status}}' "$package" 2>/dev/null | grep -q 'install ok installed' \\
    && ok "$package installed" || bad "$package is not installed"
done
while read -r key value; do
  found=$(cat "$proc/sys/$(echo "$key" | tr . /)" 2>/dev/null)
  [ "$found" = "$value" ] && ok "$key = $found" || bad "$key is ${{found:-unset}}, the baseline $value"
done <<EOF
{sysctls}
EOF
for module in {modules}; do
  [ -d "$sys/module/$module" ] && ok "module $module" || bad "module $module is not loaded"
done
# containerd: the CRI answers; its config (as containerd reads it, drop-ins merged) runs runc on the
# kubelet's cgroup driver and pins the sandbox image
crictl --runtime-endpoint {socket} info >/dev/null 2>&1 && ok "containerd answers on the CRI" \\
  || bad "containerd does not answer on the CRI ({socket}): not running, or its config.toml disables the CRI"
dump=$(containerd config dump 2>/dev/null)
printf '%s\\n' "$dump" | grep -Eq '^[[:space:]]*SystemdCgroup = true' && ok "runc on the systemd cgroup driver (the kubelet's)" \\
  || bad "runc is not on the systemd cgroup driver, the kubelet's: install {config_path} (host-prep-{pool}.sh)"
printf '%s\\n' "$dump" | grep -Eq "^[[:space:]]*sandbox = ['\\"]{sandbox}['\\"]" && ok "sandbox image {sandbox}" \\
  || bad "the sandbox image is not {sandbox}, the one kubeadm expects"
# time: chrony synchronised, within {max_offset_ms} ms (CSV field 5: the system clock's offset, s)
chronyc -c tracking 2>/dev/null | awk -F, -v max={max_offset_ms} '
  $14 != "Normal" {{ print "FAIL time: chrony is " ($14 == "" ? "not running" : $14); bad = 1; exit }}
  {{ ms = ($5 < 0 ? -$5 : $5) * 1000 }}
  ms > max {{ printf "FAIL time is %.1f ms off %s, more than %d\\n", ms, $2, max; bad = 1; exit }}
  {{ printf "ok   time within %.1f ms of %s\\n", ms, $2 }}
  END {{ if (NR == 0) {{ print "FAIL time: chrony does not answer"; bad = 1 }}; exit bad }}' || fail=1
{firmware}[ "$fail" = 0 ] && echo "host baseline passed" || echo "host baseline FAILED: fix the lines above before the join"
exit "$fail"
"""

BIOS = """\
bios=$(cat "$sys/class/dmi/id/bios_version" 2>/dev/null)
[ "$bios" = {bios} ] && ok "BIOS $bios" || bad "BIOS is ${{bios:-unknown}}, the baseline {bios}"
"""

# The NDR rails' NICs are the RDMA devices on InfiniBand: a ConnectX port on Ethernet (the 100GbE
# side) is an RDMA device too, with firmware of its own line, and is not judged by the rails' baseline.
NIC = """\
rails=0
for ib in "$sys"/class/infiniband/*; do
  [ -e "$ib/fw_ver" ] || continue
  if [ "$(cat "$ib/ports/1/link_layer" 2>/dev/null)" != InfiniBand ]; then
    echo "skip ${{ib##*/}}: on Ethernet, not an NDR rail"
    continue
  fi
  rails=$((rails + 1))
  fw=$(cat "$ib/fw_ver")
  [ "$fw" = {nic} ] && ok "${{ib##*/}} firmware $fw" || bad "${{ib##*/}} firmware is $fw, the baseline {nic}"
done
[ "$rails" = {ports} ] && ok "{ports} NDR rail NICs" || bad "$rails InfiniBand NICs report their firmware, the hardware has {ports}"
"""

CMDLINE = """\
for arg in {args}; do
  tr ' ' '\\n' < "$proc/cmdline" | grep -qx -- "$arg" && ok "kernel argument $arg" \\
    || bad "kernel argument $arg is missing: run host-prep-{pool}.sh and reboot"
done
"""

# lspci -vvv prints each device's header line unindented, then its capabilities; an ACSCtl line with
# ReqRedir+ or CmpltRedir+ sends peer traffic of that switch port up to the root complex
ACS = """\
lspci -vvv 2>/dev/null | awk '
  /^[0-9a-f]/ {{ device = $1 }}
  /ACSCtl:/ && /(ReqRedir|CmpltRedir)\\+/ {{ print "FAIL PCIe " device ": ACS redirect on (GPUDirect RDMA crosses the root complex): off in the BIOS"; bad = 1 }}
  END {{ if (NR == 0) {{ print "FAIL lspci printed nothing"; exit 1 }}; if (!bad) print "ok   PCIe ACS redirect off"; exit bad }}' || fail=1
"""


def hardware_model(site: Site, pool: PoolLayout) -> str:
    """The hardware.yaml key of a pool's hardware (a carved-out control plane keeps its pool's)."""
    return next(name for name, hardware in site.hardware.items() if hardware is pool.hardware)


def kubernetes_package_version(site: Site) -> str:
    return f"{site.versions.kubernetes.lstrip('v')}-{site.hosts.packages.kubernetes_revision}"


def _versions(site: Site) -> list[tuple[str, str]]:
    kube = kubernetes_package_version(site)
    return [("containerd.io", site.hosts.packages.containerd), *((n, kube) for n in HELD[1:])]


def prep_script(site: Site, pool: PoolLayout) -> str:
    hosts = site.hosts
    firmware = hosts.firmware.get(hardware_model(site, pool))
    args = firmware.kernel_args if firmware else []
    os_pair = f"{hosts.os.id} {hosts.os.version_id}"
    packages = [
        *hosts.packages.others,
        *(f"{name}={version}" for name, version in _versions(site)),
        f"linux-image-{hosts.os.kernel}",
    ]
    return PREP.format(
        os=shlex.quote(os_pair), os_text=os_pair, pool=pool.name, kernel=hosts.os.kernel,
        modules=" ".join(hosts.modules),
        sysctls="".join(f"{k} = {v}\n" for k, v in hosts.kernel_settings.items()),
        packages=" ".join(shlex.quote(p) for p in packages), held=" ".join(HELD),
        time="".join(f"server {s} iburst\n" for s in hosts.time.servers),
        kernel_args=KERNEL_ARGS.format(args=" ".join(args)) if args else "",
        pki=_pki_archive() if pool.is_control_plane else "",
        kubernetes_source=shlex.quote(hosts.packages.kubernetes_source(site.versions.kubernetes_minor)),
        certs_d=containerd.CERTS_D, drop_ins=containerd.DROP_INS.rsplit("/", 1)[0],
        config_path=containerd.CONFIG_PATH, containerd=containerd.containerd_config(site, pool),
    )  # fmt: skip


def _pki_archive() -> str:
    return PKI_ARCHIVE.format(
        archive_dir=etcd_backup.HOST_ARCHIVE_DIR, archiver=etcd_backup.HOST_ARCHIVER,
        script=etcd_backup.PKI_SCRIPT, unit=etcd_backup.ARCHIVE_UNIT, recipient=etcd_backup.HOST_RECIPIENT,
    )  # fmt: skip


# UEFI's SecureBoot variable (efivarfs: four bytes of attributes, then 1 when on). The GPU Operator's
# driver container builds the NVIDIA modules on the node, unsigned: with Secure Boot on, the kernel
# refuses to load them (Operation not permitted); only NVIDIA's precompiled signed drivers load there.
SECURE_BOOT = """\
sb="$sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
if [ -e "$sb" ] && [ "$(od -An -t u1 -j4 -N1 "$sb" | tr -d ' ')" = 1 ]; then
  bad "Secure Boot is on: the GPU Operator's driver container builds unsigned NVIDIA modules the kernel refuses; turn it off in the firmware"
else
  ok "Secure Boot off"
fi
"""


def preflight_script(site: Site, pool: PoolLayout) -> str:
    hosts = site.hosts
    firmware = hosts.firmware.get(hardware_model(site, pool))
    checks = SECURE_BOOT if pool.hardware.gpu is not None else ""
    if firmware is not None:
        checks += BIOS.format(bios=shlex.quote(firmware.bios))
        if firmware.nic is not None and pool.hardware.ndr400_ports:
            checks += NIC.format(nic=shlex.quote(firmware.nic), ports=pool.hardware.ndr400_ports)
        if firmware.kernel_args:
            checks += CMDLINE.format(args=" ".join(firmware.kernel_args), pool=pool.name)
        if firmware.acs_redirect_off:
            checks += ACS.format()
    os_pair = f"{hosts.os.id} {hosts.os.version_id}"
    return PREFLIGHT.format(
        pool=pool.name, model=f"hardware {hardware_model(site, pool)}" if firmware else "no firmware baseline",
        os=shlex.quote(os_pair), os_text=os_pair, kernel=shlex.quote(hosts.os.kernel),
        versions="\n".join(f"{n} {v}" for n, v in _versions(site)),
        others=" ".join(hosts.packages.others),
        sysctls="\n".join(f"{k} {v}" for k, v in hosts.kernel_settings.items()),
        modules=" ".join(hosts.modules), max_offset_ms=hosts.time.max_offset_ms, firmware=checks,
        socket=containerd.SOCKET, config_path=containerd.CONFIG_PATH,
        sandbox=containerd.sandbox_image(site),
    )  # fmt: skip


def baseline_files(site: Site, variant: str, cluster: ClusterLayout) -> list[OutputFile]:
    folder = paths.kubeadm_dir(variant, cluster.name)
    files = []
    for pool in cluster.pools:
        files.append(OutputFile(
            folder / f"containerd-{pool.name}.toml", [],
            f"containerd's configuration on the hosts of pool {pool.name}: {containerd.CONFIG_PATH}\n"
            f"host-prep-{pool.name}.sh writes it (the package's own disables the CRI); restart containerd after.",
            text=containerd.containerd_config(site, pool),
        ))  # fmt: skip
        where = (
            f"On every host of pool {pool.name}, before `kubeadm init` or `join`; as root: bash <this file>"
        )
        files += [
            OutputFile(folder / f"host-prep-{pool.name}.sh", [],
                       f"Applies the host baseline (config/hosts.yaml) to a host of pool {pool.name}.\n{where}",
                       text=prep_script(site, pool)),
            OutputFile(folder / f"host-preflight-{pool.name}.sh", [],
                       f"Checks a host of pool {pool.name} against the host baseline (config/hosts.yaml).\n{where}",
                       text=preflight_script(site, pool)),
        ]  # fmt: skip
    return files
