"""What must hold once every Application is Healthy, beside the Applications themselves."""

from __future__ import annotations

from sitegen.check.bringup.events import Event
from sitegen.check.bringup.kube import Taint
from sitegen.check.bringup.state import SimulationState


def check_node_identity(state: SimulationState) -> None:
    """The seed's labels and taints reached every node: labels by the runbook and the kubelet's
    own node-labels, taints at registration only (nothing in dist/ creates a Node)."""
    state.step = "nodes"
    for cluster in state.clusters.values():
        for node in cluster.nodes.values():
            pool = state.hosts[node.name]
            missing = {k: v for k, v in pool.labels.items() if node.labels.get(k) != v}
            if missing:
                label = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
                raise state.blocked(cluster.name, node.name, f"lacks its pool's labels: {label}")
            taints = {Taint(t.key, t.value or "", t.effect) for t in pool.taints}
            if not taints <= set(node.taints):
                absent = ", ".join(sorted(map(str, taints - set(node.taints))))
                raise state.blocked(cluster.name, node.name, f"lacks its pool's taints: {absent}")
        state.result.timeline.append(
            Event(
                cluster.name,
                state.step,
                f"every node carries its pool's labels and taints ({len(cluster.nodes)})",
            )
        )
