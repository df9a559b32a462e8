"""containerd's configuration on every host, per pool: what the kubelet needs of its runtime.

Docker's `containerd.io` package (the host baseline's) ships `/etc/containerd/config.toml` with
`disabled_plugins = ["cri"]` (docker/containerd-packaging common/containerd.toml): kubeadm's preflight
then finds no container runtime. This configuration (containerd 2's version 3, docs/cri/config.md):

- requires the CRI plugin (`required_plugins`): containerd refuses to start without it;
- runs runc with the systemd cgroup driver, as the kubelet's configuration does (`cgroupDriver:
  systemd`): one cgroup manager on a systemd host;
- pins the sandbox (pause) image kubeadm expects (`images.pause` of versions.yaml), pulled like every
  image through the registry mirrors of `config_path` (Harbor's proxy caches, dist/<variant>/containerd/);
- on GPU pools imports `/etc/containerd/conf.d/*.toml`, where the GPU Operator's container toolkit
  writes its runtime as a drop-in with containerd 2 [inferred from the toolkit's `--drop-in-config`;
  the import is harmless where it writes none].
"""

from __future__ import annotations

from constructs.kubeadm import CGROUP_DRIVER, CRI_SOCKET
from sitegen.model import PoolLayout, Site

CONFIG_PATH = "/etc/containerd/config.toml"
CERTS_D = "/etc/containerd/certs.d"
DROP_INS = "/etc/containerd/conf.d/*.toml"
SOCKET = CRI_SOCKET
CRI_IMAGES = "io.containerd.cri.v1.images"
CRI_RUNTIME = "io.containerd.cri.v1.runtime"


def sandbox_image(site: Site) -> str:
    return site.versions.images["pause"].ref


def containerd_config(site: Site, pool: PoolLayout) -> str:
    """The pool's /etc/containerd/config.toml (TOML, version 3)."""
    imports = f"imports = ['{DROP_INS}']  # the GPU Operator's toolkit runtime\n" if pool.hardware.gpu else ""
    return f"""version = 3
{imports}required_plugins = ['io.containerd.grpc.v1.cri']

[plugins.'{CRI_IMAGES}'.pinned_images]
  sandbox = '{sandbox_image(site)}'

[plugins.'{CRI_IMAGES}'.registry]
  config_path = '{CERTS_D}'

[plugins.'{CRI_RUNTIME}'.containerd]
  default_runtime_name = 'runc'

[plugins.'{CRI_RUNTIME}'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'{CRI_RUNTIME}'.containerd.runtimes.runc.options]
  SystemdCgroup = {"true" if CGROUP_DRIVER == "systemd" else "false"}
"""
