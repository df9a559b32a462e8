"""The local NVMe cache's LVM volume group on the hosts of a cache pool (config/storage.yaml
`local_cache`), as a script beside the kubeadm configs: `local-cache-<pool>.sh`.

It picks the drives from what the kernel shows, never by device name: NVMe enumeration order is not
stable, and the OS may boot from an NVMe device too (Dell's BOSS-N1, HPE's NS204i). A drive is taken
when its size is the one config/hardware.yaml gives the pool's model (within 2 %) and it holds
nothing: no partition, no holder (LVM, RAID, device mapper), no signature blkid finds (a filesystem, an
old physical volume). Unless it finds exactly the model's number of such drives it creates nothing and
says what it saw; where the volume group exists already (a second run) it does nothing.
"""

from __future__ import annotations

from sitegen.compose.writer import OutputFile
from sitegen.model import ClusterLayout, PoolLayout, Site, paths

SIZE_TOLERANCE = 0.02  # a drive sold as 15.36 TB holds a little more or less

SCRIPT = """\
set -eu
# The local NVMe cache of pool {pool}: volume group {vg} over {drives} empty NVMe drive(s) of {size_gb} GB
# ({model}, config/hardware.yaml)
sys=${{SYSFS:-/sys}}
if vgs {vg} >/dev/null 2>&1; then
  echo "volume group {vg} exists: nothing to do"
  exit 0
fi
found=""
for block in "$sys"/block/nvme*n*; do
  [ -e "$block/size" ] || continue
  name=${{block##*/}}
  bytes=$(( $(cat "$block/size") * 512 ))
  why=""
  if [ "$bytes" -lt {low} ] || [ "$bytes" -gt {high} ]; then
    why="$((bytes / 1000000000)) GB, not {size_gb}"
  elif ls "$block" | grep -q "^${{name}}p[0-9]"; then
    why="partitioned"
  elif [ -n "$(ls "$block/holders" 2>/dev/null)" ]; then
    why="in use by $(ls "$block/holders" | tr '\\n' ' ')"
  elif blkid -p "/dev/$name" >/dev/null 2>&1; then
    why="holds $(blkid -p -o value -s TYPE "/dev/$name" 2>/dev/null || echo a signature)"
  fi
  if [ -n "$why" ]; then
    echo "skip /dev/$name: $why"
  else
    echo "take /dev/$name"
    found="$found /dev/$name"
  fi
done
count=$(echo $found | wc -w)
if [ "$count" != {drives} ]; then
  echo "FAIL found $count empty NVMe drive(s) of {size_gb} GB, {model} has {drives}: nothing created." \\
    "Wipe a drive meant for the cache (wipefs -a), or correct config/hardware.yaml"
  exit 1
fi
pvcreate $found
vgcreate {vg} $found
"""


def cache_script_name(pool: PoolLayout) -> str:
    return f"local-cache-{pool.name}.sh"


def cache_script(site: Site, pool: PoolLayout) -> str:
    nvme, volume_group = pool.hardware.nvme, site.storage.local_cache.volume_group
    model = f"{pool.hardware.vendor} {pool.hardware.model}"
    size = nvme.drive_gb * 1_000_000_000
    return SCRIPT.format(
        pool=pool.name, vg=volume_group, drives=nvme.drives, size_gb=nvme.drive_gb, model=model,
        low=int(size * (1 - SIZE_TOLERANCE)), high=int(size * (1 + SIZE_TOLERANCE)),
    )  # fmt: skip


def cache_files(site: Site, variant: str, cluster: ClusterLayout) -> list[OutputFile]:
    folder = paths.kubeadm_dir(variant, cluster.name)
    return [
        OutputFile(
            folder / cache_script_name(pool),
            [],
            f"Creates the local NVMe cache's volume group on a host of pool {pool.name} over its empty cache "
            "drives.\nOn every host of the pool (RUNBOOK: Local NVMe cache); as root: bash <this file>",
            text=cache_script(site, pool),
        )
        for pool in cluster.pools
        if pool.name in site.storage.local_cache.pools
    ]
