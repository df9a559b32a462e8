"""A cluster's bring-up, from its control plane to the CNI that lets pods start."""

from __future__ import annotations

from sitegen.components.operator_steps import Stage
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.component_steps import component_steps
from sitegen.compose.procedures.control_plane import control_plane
from sitegen.compose.procedures.nodes import local_cache, node_labels
from sitegen.compose.procedures.workers import workers
from sitegen.model import ClusterLayout
from sitegen.tree.runbook import Runbook


def cluster_bring_up(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    book.part(f"Cluster `{cluster.name}`")
    control_plane(book, apps, cluster)
    workers(book, apps, cluster)
    node_labels(book, apps, cluster)
    local_cache(book, apps, cluster)
    component_steps(book, apps, Stage.POD_NETWORK, [cluster])
