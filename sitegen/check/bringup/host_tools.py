"""Tools a host script may call beyond the base system, where each comes from, and whether it is on a
pool's hosts when the runbook runs the script (the replay's `bash <file>`)."""

from __future__ import annotations

from sitegen.check.bringup.state import SimulationState


def _gpu_driver(sim: SimulationState, cluster: str | None, pool: str) -> str | None:
    """The GPU Operator installs the driver (in its container, root /run/nvidia/driver) on joined
    nodes once its ClusterPolicy is ready."""
    found = sim.clusters.get(cluster or "")
    nodes = [n for n in found.nodes.values() if n.pool == pool] if found else []
    if not nodes:
        return "the hosts have not joined, and the GPU Operator installs the driver only on nodes"
    policies = found.of_kind("ClusterPolicy") if found else []
    if not policies or found.operators.controller_status(policies[0][1].body).get("state") != "ready":  # type: ignore[union-attr]
        return "the GPU Operator has not installed it (its ClusterPolicy is not ready)"
    return None


def _never(sim: SimulationState, cluster: str | None, pool: str) -> str | None:
    return "nothing in this site's plan installs it (the inbox RDMA stack has no such tool)"


# Tools a host script may call beyond the base system, where each comes from, and whether it is on a
# pool's hosts at the moment the runbook runs the script.
HOST_TOOLS = {
    "nvidia-smi": ("the GPU driver", _gpu_driver),
    "ibdev2netdev": ("MLNX_OFED's host tools", _never),
    "ibstat": ("infiniband-diags", _never),
    "sminfo": ("infiniband-diags", _never),
}
