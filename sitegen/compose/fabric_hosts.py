"""Host preparation for the NDR rails, per fabric pool: what the operator runs before the node joins
(`fabric-prep-<pool>.sh`) and the check that the host matches the rail map (`fabric-preflight-<pool>.sh`).

Selectors, NCCL_IB_HCA and the alerts assume the rail map's device and interface names (mlx5_0 ->
ibs0 on rail A, ...); nothing else makes them true. The prep script names each IPoIB interface after
its RDMA device (a udev rule, stable across reboots), loads the IPoIB and RDMA CM modules at boot and
lifts the locked-memory limit of containerd (RDMA registers memory). The preflight compares
`ibdev2netdev` (device -> interface, link up) and, on GPU pools, `nvidia-smi topo -m` (each GPU on
the PCIe switch of its rail's NIC) with the rail map, and asks the subnet manager (`sminfo`);
every mismatch is one line, and the exit status says whether the node may join.
"""

from __future__ import annotations

from sitegen.compose import paths
from sitegen.compose.writer import OutputFile
from sitegen.model import ClusterLayout, Site

# `nvidia-smi topo -m` relations that keep GPUDirect RDMA on one PCIe switch
NEAR = ("PIX", "PXB")

PREP = """\
set -eu
# IPoIB interfaces named after their RDMA device, as the rail map says (ARPHRD_INFINIBAND = 32)
cat > /etc/udev/rules.d/70-sitegen-ipoib.rules <<'EOF'
{udev}EOF
# IPoIB and RDMA connection manager at every boot
printf 'ib_ipoib\\nrdma_ucm\\n' > /etc/modules-load.d/sitegen-rdma.conf
modprobe ib_ipoib
modprobe rdma_ucm
# RDMA pins (registers) memory: no locked-memory limit for containerd and the pods it starts
mkdir -p /etc/systemd/system/containerd.service.d
printf '[Service]\\nLimitMEMLOCK=infinity\\n' > /etc/systemd/system/containerd.service.d/memlock.conf
systemctl daemon-reload
udevadm control --reload
udevadm trigger --subsystem-match=net --action=add
echo "prepared; reboot if an interface kept its old name, then run fabric-preflight-{pool}.sh"
"""

PREFLIGHT = """\
set -u
# The rail map of pool {pool}: RDMA device, IPoIB interface, rail, GPUs behind it
RAIL_MAP='{rail_map}'
fail=0
bad() {{ echo "FAIL $*"; fail=1; }}
links=$(ibdev2netdev 2>&1) || bad "ibdev2netdev: $links"
while read -r dev netdev rail gpus; do
  line=$(printf '%s\\n' "$links" | grep -E "^$dev port [0-9]+ ==> " | head -n 1)
  case "$line" in
    "") bad "$dev (rail $rail): no such RDMA device" ;;
    *"==> $netdev (Up)"*) echo "ok   $dev -> $netdev (rail $rail) up" ;;
    *"==> $netdev "*) bad "$dev -> $netdev (rail $rail) is not up: $line" ;;
    *) bad "$dev should be $netdev (rail $rail): $line" ;;
  esac
done <<EOF
$RAIL_MAP
EOF
if [ {gpu_pool} = 1 ]; then
  topo=$(nvidia-smi topo -m 2>&1) || bad "nvidia-smi topo -m: $topo"
  # the NIC legend maps NICn to mlx5_n; the matrix row of a GPU gives its relation to each NICn
  while read -r dev netdev rail gpus; do
    nic=$(printf '%s\\n' "$topo" | sed -n "s/^ *\\(NIC[0-9]*\\): $dev\\$/\\1/p")
    [ -n "$nic" ] || {{ bad "$dev is not in nvidia-smi's NIC legend"; continue; }}
    # the header row starts with an empty cell, so its n-th word line is field n of a GPU row
    column=$(printf '%s\\n' "$topo" | head -n 1 | tr -s ' \\t' '\\n' | grep -n -x "$nic" | cut -d: -f1)
    for gpu in $(printf '%s' "$gpus" | tr ',' ' '); do
      relation=$(printf '%s\\n' "$topo" | awk -v row="GPU$gpu" -v col="$column" 'NR > 1 && $1 == row {{ print $col; exit }}')
      case "$relation" in
        {near}) echo "ok   GPU$gpu -> $dev ($relation)" ;;
        *) bad "GPU$gpu -> $dev is $relation, not on one PCIe switch: traffic of rail $rail crosses the CPU" ;;
      esac
    done
  done <<EOF
$RAIL_MAP
EOF
fi
sm=$(sminfo 2>&1) || bad "no subnet manager answers on the fabric: $sm"
[ "$fail" = 0 ] && echo "fabric preflight passed" || echo "fabric preflight FAILED: fix the lines above"
exit "$fail"
"""


def rail_map(site: Site, pool: str) -> str:
    """`device interface rail gpus` a line, as both scripts read it."""
    return "\n".join(
        f"{nic.name} {nic.netdev} {nic.rail} {','.join(map(str, nic.gpus)) or '-'}"
        for nic in site.fabric.nics[pool]
    )


def fabric_files(site: Site, variant: str, cluster: ClusterLayout) -> list[OutputFile]:
    files = []
    folder = paths.kubeadm_dir(variant, cluster.name)
    for pool in cluster.pools:
        if pool.name not in site.fabric.nics:
            continue
        udev = "".join(
            f'ACTION=="add", SUBSYSTEM=="net", ATTR{{type}}=="32", '
            f'PROGRAM="/bin/ls /sys/class/net/%k/device/infiniband", RESULT=="{nic.name}", NAME="{nic.netdev}"\n'
            for nic in site.fabric.nics[pool.name]
        )
        where = f"On every host of pool {pool.name}, before `kubeadm join`; as root: bash <this file>"
        files.append(
            OutputFile(
                folder / f"fabric-prep-{pool.name}.sh",
                [],
                f"Rail map of pool {pool.name}: fabric.nics.{pool.name} of config/fabric.yaml.\n{where}",
                text=PREP.format(udev=udev, pool=pool.name),
            )
        )
        files.append(
            OutputFile(
                folder / f"fabric-preflight-{pool.name}.sh",
                [],
                f"Checks a host of pool {pool.name} against the rail map (fabric.nics.{pool.name}).\n{where}",
                text=PREFLIGHT.format(
                    pool=pool.name,
                    rail_map=rail_map(site, pool.name),
                    gpu_pool=int(pool.hardware.gpu is not None),
                    near="|".join(NEAR),
                ),
            )
        )
    return files
