"""Every host: the host baseline (config/hosts.yaml), then containerd pulls through Harbor's proxy caches."""

from __future__ import annotations

from sitegen.compose.ansible import group as ansible_group
from sitegen.compose.apps import VariantApps
from sitegen.model import paths
from sitegen.tree.runbook import Runbook


def every_host(book: Runbook, apps: VariantApps) -> None:
    site = apps.site
    registry = site.services.registry
    trust = (
        " Nodes must trust the site CA (OS trust store) for Harbor's certificate."
        if site.services.certificates.issuer == "internal-ca"
        else ""
    )
    aistor_blobs = registry.storage == "aistor"
    blobs = "in AIStor" if aistor_blobs else "on PowerScale"
    aistor = ", AIStor itself" if aistor_blobs else ""
    book.part("Every host")
    book.step("The host baseline", _baseline(apps))
    book.step(
        "containerd pulls through Harbor",
        f"""
Copy `{paths.in_repo(paths.mirrors_dir(apps.layout.name))}/` to `/etc/containerd/certs.d/` on every host: the
containerd configuration of the baseline reads its registry hosts there (`config_path`).
Images of {", ".join(f"`{c.registry}`" for _, c in sorted(registry.proxy_cache.items()))} are then pulled
through Harbor's proxy caches at `{registry.hostname}`; each upstream stays the fallback, so pulls work
before Harbor runs. Their `authorization` header is a placeholder: the projects are private, and step
"Harbor's pull credential on every host" puts the pull robot's credential in, from the vault; until
then Harbor refuses the placeholder and containerd pulls from the upstream.{trust} Harbor's blobs live {blobs}: until Harbor serves, every image of the bring-up
(Cilium, Argo CD, the operators{aistor}) comes from its upstream registry. A site without a route to them
adds its own registry mirror to each `hosts.toml` for the bring-up, or loads those images on the hosts
first (`ctr -n k8s.io images import`); Harbor takes over once it is Healthy.
""",
    )


def _baseline(apps: VariantApps) -> str:
    hosts = apps.site.hosts
    variant = apps.layout.name
    lines = [
        f"bash {paths.in_repo(paths.kubeadm_dir(variant, cluster.name))}/host-{stage}-{pool.name}.sh"
        f"   # every host of {cluster.name}/{pool.name}"
        for stage in ("prep", "preflight")
        for cluster in apps.layout.clusters
        for pool in cluster.pools
    ]
    half = len(lines) // 2
    groups = [ansible_group(c.name, p.name) for c in apps.layout.clusters for p in c.pools]
    return f"""
Every host is built from the site's {hosts.os.id} {hosts.os.version_id} image and its package mirror.
As root on each host, apply the baseline of its pool (swap off, modules, sysctls, chrony against
{", ".join(f"`{s}`" for s in hosts.time.servers)}, the packages at their versions and held, containerd's
configuration (`kubeadm/<cluster>/containerd-<pool>.toml`: the CRI on, which the package's own
configuration disables, runc on the systemd cgroup driver as the kubelet, the sandbox image pinned),
kernel `{hosts.os.kernel}` made the boot default and held, and the kernel arguments of its hardware),
reboot, then check it. The preflight also checks that containerd answers on the CRI with that
configuration, and what no script sets: the BIOS and ConnectX firmware levels of the hardware model
and, on GPU hosts, PCIe ACS redirect off (a BIOS setting). The preflight ends with "host baseline passed"; a host
that prints a `FAIL` line does not join until the line is fixed.

From a machine with SSH to the hosts, Ansible runs it per pool, a tenth of the pool's hosts at a time,
and stops a pool at its first failing host (`{paths.in_repo(paths.ansible_dir(variant))}/`: the inventory
of every host, groups `<cluster>_<pool>`, and the playbook of the per-host steps; the same scripts):

```sh
cd {paths.in_repo(paths.ansible_dir(variant))}
{chr(10).join(f"ansible-playbook -i inventory.yml site.yml --tags baseline,mirrors -e sitegen_hosts={group}" for group in groups)}
```

By hand on each host, the same:

```sh
{chr(10).join(lines[:half])}
reboot
{chr(10).join(lines[half:])}
```

The playbook's other tags run the later per-host steps the same way: `fabric` (Fabric preparation) and
`join-files` (the kubelet's and, on the control plane, the API server's files of the joins, the
encryption configuration with `ENCRYPTION_KEY` exported from the vault).
"""
