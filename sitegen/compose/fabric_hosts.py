"""Host preparation for the NDR rails, per fabric pool: what the operator runs before the node joins
(`fabric-prep-<pool>.sh`, `fabric-preflight-<pool>.sh`) and, on GPU pools, once the GPU driver runs
there (`fabric-topology-<pool>.sh`).

Selectors, NCCL_IB_HCA and the alerts assume the rail map's device and interface names (mlx5_0 ->
ibs0 on rail A, ...); nothing else makes them true. The prep script names each IPoIB interface after
its RDMA device (a udev rule, stable across reboots), loads the IPoIB and RDMA CM modules at boot and
lifts the locked-memory limit of containerd (RDMA registers memory). The preflight, before the join,
reads what the kernel alone knows (sysfs: each RDMA device, its IPoIB interface, the port's state,
ACTIVE only once a subnet manager configured it) against the rail map: no OFED tool (`ibdev2netdev`)
and no GPU driver exist yet. On GPU pools the topology check runs once the GPU Operator's driver is
there (`nvidia-smi topo -m` from the driver's root: each GPU on the PCIe switch of its rail's NIC).
Every mismatch is one line; the exit status says whether the node may join, or must be cordoned.
"""

from __future__ import annotations

from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.compose.writer import OutputFile
from sitegen.model import ClusterLayout, Site, paths

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
# Before the join only the kernel's view exists (no OFED tools, no GPU driver yet): sysfs
sys=${{SYSFS:-/sys}}
fail=0
bad() {{ echo "FAIL $*"; fail=1; }}
while read -r dev netdev rail gpus; do
  ib="$sys/class/infiniband/$dev"
  if [ ! -d "$ib" ]; then bad "$dev (rail $rail): no such RDMA device"; continue; fi
  names=" $(ls "$ib/device/net" 2>/dev/null | tr '\\n' ' ')"
  case "$names" in
    *" $netdev "*) ;;
    *) bad "$dev should carry $netdev (rail $rail): it has${{names% }}"; continue ;;
  esac
  # 4: ACTIVE once the subnet manager configured the port; 2: INIT is a link no SM answers
  state=$(cat "$ib/ports/1/state" 2>/dev/null)
  case "$state" in
    *ACTIVE*) echo "ok   $dev -> $netdev (rail $rail) active" ;;
    *INIT*) bad "$dev -> $netdev (rail $rail) is $state: no subnet manager configured the port" ;;
    *) bad "$dev -> $netdev (rail $rail) is ${{state:-without state}}: the link is not up" ;;
  esac
done <<EOF
$RAIL_MAP
EOF
[ "$fail" = 0 ] && echo "fabric preflight passed" || echo "fabric preflight FAILED: fix the lines above"
exit "$fail"
"""

TOPOLOGY = """\
set -u
# The rail map of pool {pool}: RDMA device, IPoIB interface, rail, GPUs behind it
RAIL_MAP='{rail_map}'
fail=0
bad() {{ echo "FAIL $*"; fail=1; }}
# nvidia-smi from the GPU Operator's driver root; from the PATH where a driver is installed on the host
if command -v nvidia-smi >/dev/null 2>&1; then
  topo=$(nvidia-smi topo -m 2>&1) || bad "nvidia-smi topo -m: $topo"
else
  topo=$(chroot "${{DRIVER_ROOT:-{driver_root}}}" nvidia-smi topo -m 2>&1) || bad "nvidia-smi topo -m: $topo"
fi
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
[ "$fail" = 0 ] && echo "GPU topology matches the rail map" || echo "GPU topology FAILED: cordon the node and fix the lines above"
exit "$fail"
"""


def rail_map(site: Site, pool: str) -> str:
    """`device interface rail gpus` a line, as the scripts read it."""
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
        rails = rail_map(site, pool.name)
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
                text=PREFLIGHT.format(pool=pool.name, rail_map=rails),
            )
        )
        if pool.hardware.gpu is not None:
            files.append(
                OutputFile(
                    paths.topology_script(variant, cluster.name, pool.name),
                    [],
                    f"Checks each GPU of a pool {pool.name} host against its rail's NIC (fabric.nics.{pool.name}).\n"
                    "On every host of the pool once the GPU Operator's driver runs there; as root: bash <this file>",
                    text=TOPOLOGY.format(
                        pool=pool.name,
                        rail_map=rails,
                        near="|".join(NEAR),
                        driver_root=GpuOperator.driver_root,
                    ),
                )
            )
    return files
