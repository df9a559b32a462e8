"""config/hosts.yaml: the baseline every host is built to before it joins: the OS and its kernel, the
packages (the Kubernetes ones at versions.yaml's release), swap off (the kubelet's failSwapOn), time, kernel settings, and per
hardware model the firmware and the kernel arguments its devices need. `host-prep-<pool>.sh` applies
what a script can; `host-preflight-<pool>.sh` checks all of it on the host and says what is off."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sitegen.model.fields import ConfigError, DnsName, Strict

Version = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.+~:_-]*$")]
Sysctl = Annotated[str, Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")]
Module = Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
KernelArg = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.,:=-]+$")]

# The kernel settings the kubelet needs. With protectKernelDefaults (the cluster's KubeletConfiguration
# sets it, CIS 4.2.6) the kubelet does not set them itself: it refuses to start unless the host already
# has them (kubelet v1.35 pkg/kubelet/cm/container_manager_linux.go setupKernelTunables; the values are
# component-helpers/node/util/sysctl's). The baseline writes them with the site's own settings.
KUBELET_KERNEL_TUNABLES = {
    "kernel.keys.root_maxbytes": "25000000",
    "kernel.keys.root_maxkeys": "1000000",
    "kernel.panic": "10",
    "kernel.panic_on_oops": "1",
    "vm.overcommit_memory": "1",
    "vm.panic_on_oom": "0",
}


class Os(Strict):
    id: Annotated[str, Field(pattern=r"^[a-z]+$")]  # /etc/os-release ID
    version_id: Version  # /etc/os-release VERSION_ID
    kernel: Version  # `uname -r`: one kernel everywhere, the GPU driver container builds against it


class Packages(Strict):
    """Exact versions from the site's package mirror, installed and held (apt)."""

    containerd: Version  # the package `containerd.io` (containerd 2: its CRI config is version 3)
    kubernetes_revision: Version = "1.1"  # the Debian revision of kubelet, kubeadm and kubectl
    # The mirror's apt repository of the Kubernetes packages, one per minor (`{minor}`: v1.35): the
    # baseline points apt at the running minor's, an upgrade at the next one's first.
    kubernetes_repository: Annotated[str, Field(pattern=r"^https://[^\s{}]+\{minor\}[^\s{}]*$")]
    # the repository's signing key, which the site's OS image carries
    kubernetes_keyring: Annotated[str, Field(pattern=r"^/[\w./-]+$")] = (
        "/etc/apt/keyrings/kubernetes-apt-keyring.gpg"
    )

    def kubernetes_source(self, minor: str) -> str:
        """The apt source line of one minor's repository."""
        return f"deb [signed-by={self.kubernetes_keyring}] {self.kubernetes_repository.format(minor=minor)} /"

    others: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$")]] = []  # any version


class Time(Strict):
    servers: list[DnsName] = Field(min_length=1)
    max_offset_ms: Annotated[int, Field(ge=1, le=1000)] = 100  # etcd leases and TLS expect agreement


class Firmware(Strict):
    """What a hardware model's hosts must run: the vendors' qualified versions, and the kernel
    arguments and PCIe settings its devices need."""

    bios: Version  # /sys/class/dmi/id/bios_version
    nic: Version | None = None  # fw_ver of every RDMA device (ConnectX), on models with NDR ports
    kernel_args: list[KernelArg] = []  # each must be on /proc/cmdline
    # GPUDirect RDMA: ACS request/completion redirect off on the PCIe switches, so GPU-NIC traffic stays
    # under the switch instead of going up to the root complex (the BIOS setting, or setpci at boot)
    acs_redirect_off: bool = False


class Hosts(Strict):
    os: Os
    packages: Packages
    time: Time
    sysctls: dict[Sysctl, str] = {}
    modules: list[Module] = []
    firmware: dict[str, Firmware] = {}  # by hardware model of hardware.yaml

    @property
    def kernel_settings(self) -> dict[str, str]:
        """Every sysctl the baseline writes and the preflight checks: the site's and the kubelet's."""
        return dict(sorted({**self.sysctls, **KUBELET_KERNEL_TUNABLES}.items()))


def check_hosts_baseline(hosts: Hosts, hardware: set[str]) -> None:
    for key, value in sorted(hosts.sysctls.items()):
        needed = KUBELET_KERNEL_TUNABLES.get(key)
        if needed is not None and value != needed:
            raise ConfigError(
                ("hosts", "sysctls", key),
                f"{value!r}: the kubelet (protectKernelDefaults) does not start unless it is {needed!r}",
            )
    for model in hosts.firmware:
        if model not in hardware:
            raise ConfigError(("hosts", "firmware", model), f"no hardware model {model!r} in hardware.yaml")
