"""What takes a GPU node out of service at once: a fatal Xid, a failed row remap, an NDR link down.

One PromQL expression each, read by the site's alerts (constructs/site_alerts.py) and by the GPU node
guard that cordons (constructs/gpu_node_guard.py): series per GPU (DCGM's) or per port, each with the
`node` its scrape target runs on (NODE_LABEL).
"""

from __future__ import annotations

from dataclasses import dataclass

# The pool label node-level series carry: added by the node-exporter ServiceMonitor's relabelling.
POOL_LABEL = "pool"
# The node of a series, from its scrape target's pod (`__meta_kubernetes_pod_node_name`): never the
# exporter's own host label, which dcgm-exporter 4.6.0-4.8.3 renamed from `Hostname` to `hostname`
# (NVIDIA/dcgm-exporter#655) and a future one may rename again.
NODE_LABEL = "node"
# Xid codes that mean a GPU needs draining or a reset, not a retry: 48 double-bit ECC, 64 a row remap
# that failed, 74 NVLink, 79 fallen off the bus, 94/95 contained/uncontained ECC, 119/120 GSP. Not 63
# (a row marked for remapping at the next reset): NVIDIA's memory error management guide says
# unaffected work goes on and new work may start with the remap pending, so cordoning the node on it
# would idle eight healthy GPUs; GpuXid still reports it, and the reset comes with the next drain.
FATAL_XIDS = (48, 64, 74, 79, 94, 95, 119, 120)
IB_PORT_ACTIVE = 4  # ibv_port_state IBV_PORT_ACTIVE
IB_PHYS_LINK_UP = 5  # PortPhysicalState LinkUp


@dataclass(frozen=True)
class FabricPool:
    """A pool on the NDR fabric: its RDMA devices, as node-exporter's infiniband collector names them."""

    name: str
    devices: tuple[str, ...]

    @property
    def ports(self) -> str:
        """The label matcher of its nodes' NDR ports."""
        return f'{{{POOL_LABEL}="{self.name}", device=~"{"|".join(self.devices)}"}}'


FATAL_XID = " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {code}" for code in FATAL_XIDS)
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0"


# The port counters node_exporter's infiniband collector exports (collector/infiniband_linux.go) that a
# healthy NDR link keeps at zero: a link that went down and came back (a flap), one that retrained,
# packets received with errors (a cable or transceiver going bad, NCCL slowing down before anything
# fails). By counter, what its alert says.
NDR_ERROR_COUNTERS = {
    "node_infiniband_link_downed_total": "went down and came back",
    "node_infiniband_link_error_recovery_total": "retrained after errors",
    "node_infiniband_port_errors_received_total": "received packets with errors",
}


def ndr_errors(pool: FabricPool, counter: str, window: str) -> str:
    return f"increase({counter}{pool.ports}[{window}]) > 0"


def ndr_port_state(pool: FabricPool) -> str:
    return f"node_infiniband_physical_state_id{pool.ports}"


def ndr_link_down(pool: FabricPool) -> str:
    return f"{ndr_port_state(pool)} != {IB_PHYS_LINK_UP}"


def cordon_conditions(fabric_pools: tuple[FabricPool, ...]) -> dict[str, str]:
    """By reason (a label value), the PromQL of the nodes to cordon: one series per node, labelled
    `node` (and `cluster` where the hub sees a spoke's). A link counts once it has not been up at all for two minutes, the alert's `for` (a flap
    does not); an Xid or a row-remap failure counts at once, as its alert does."""
    gpu = f"count by (cluster, {NODE_LABEL}) ({{}})"
    # the guard takes them in name order: a GPU fault (certainly the node's) before a link (maybe a switch's)
    conditions = {
        "gpu-fatal-xid": gpu.format(FATAL_XID),
        "gpu-row-remap-failure": gpu.format(ROW_REMAP_FAILURE),
    }
    if fabric_pools:
        down = " or ".join(
            f"(({ndr_link_down(p)}) unless (max_over_time(({ndr_port_state(p)} == bool {IB_PHYS_LINK_UP})[2m:30s]) > 0))"
            for p in fabric_pools
        )
        conditions["ndr-link-down"] = f"count by (cluster, node) ({down})"
    return conditions
