"""The ordered bootstrap runbook of a variant: from bare hosts to Argo CD owning everything, written
by the procedures of `procedures/` in the order they run, with the steps the components ask for
(`Component.operator_steps`) at the stages this frame places.

Every command names files of dist/ by their path in the repository; a test checks each one exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from sitegen.components.operator_steps import Stage
from sitegen.compose.apps import VariantApps
from sitegen.compose.day2 import day2
from sitegen.compose.procedures.aistor import aistor, s3_consumers
from sitegen.compose.procedures.argo_cd import argo_cd
from sitegen.compose.procedures.before_you_start import before_you_start
from sitegen.compose.procedures.cluster import cluster_bring_up
from sitegen.compose.procedures.component_steps import component_steps
from sitegen.compose.procedures.every_host import every_host
from sitegen.compose.procedures.powers import account_powers
from sitegen.compose.procedures.pull_credential import pull_credential
from sitegen.compose.procedures.second_target import setup_step as second_target_setup
from sitegen.compose.procedures.spoke_credentials import spoke_credentials
from sitegen.compose.procedures.vault import vault_setup
from sitegen.tree.runbook import Runbook

# imported from here by the variant's composition and the tests
__all__ = ["runbook", "s3_consumers"]


def runbook(apps: VariantApps, by_cluster: Mapping[str, list[dict[str, Any]]]) -> str:
    """The runbook of a variant; `by_cluster` holds every object we render, per cluster (its vault keys
    and each cluster's vault policy are read there)."""
    book = Runbook()
    _title(book, apps)
    before_you_start(book, apps)
    every_host(book, apps)
    for cluster in [apps.layout.hub, *apps.layout.spokes]:
        cluster_bring_up(book, apps, cluster)
    book.part("Outside the clusters")
    book.numbered(partial(second_target_setup, apps))
    vault_setup(book, apps, by_cluster)
    pull_credential(book, apps)
    spoke_credentials(book, apps, by_cluster)
    argo_cd(book, apps)
    for stage in (Stage.HARDWARE_CHECKS, Stage.ACCEPTANCE):
        component_steps(book, apps, stage, apps.layout.clusters)
    aistor(book, apps)
    account_powers(book, apps)
    book.write(day2(apps))
    return book.text()


def _title(book: Runbook, apps: VariantApps) -> None:
    layout = apps.layout
    book.write(
        f"# Bootstrap runbook: {layout.name}",
        "",
        f"{layout.description} Clusters: {', '.join(c.name for c in layout.clusters)}; Argo CD runs on "
        f"`{layout.hub.name}` and manages every cluster. Run the steps in order; commands run from a checkout of "
        f"this repository at `{apps.site.gitops.revision}`, kubectl against the cluster being built.",
        "",
    )
