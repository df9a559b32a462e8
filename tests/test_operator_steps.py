"""A component's RUNBOOK steps are declared in its own module (`Component.operator_steps`); the runbook's
frame places each stage and numbers the steps, and the bring-up reads them back like any other step."""

from __future__ import annotations

from collections import defaultdict

import pytest

from constructs import Construct
from sitegen.components.base import Layer, Project, RenderedComponent
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.components.networking.cilium import Cilium
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager
from sitegen.components.storage.database import PostgresDatabase
from sitegen.compose.apps import CompositionError, variant_apps
from sitegen.compose.runbook import runbook
from sitegen.model import resolve
from sitegen.tree.runbook import runbook_steps

DEMO = Project("demo", "test components")


class FanCheck(RenderedComponent):
    """A component of every cluster that asks for a check of the hosts' fans once it is synced, and
    for two acceptance steps in a part of its own."""

    name = "fan-check"
    project = DEMO
    layer = Layer.SERVICES
    namespace = "fan-check"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        cluster = scope.cluster.name
        part = f"Fans on `{cluster}`"
        return [
            OperatorStep(Stage.ACCEPTANCE, f"Fans accepted on {cluster}", "accept the fans.", part=part),
            OperatorStep(
                Stage.HARDWARE_CHECKS, f"Fans of {cluster}", "check the fans.", after=f"{cluster}-fans"
            ),
            OperatorStep(Stage.ACCEPTANCE, f"Fans logged on {cluster}", "log the fans.", part=part),
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        pass


def _steps(site, variant: str, registry=COMPONENTS):
    # no objects: the vault's keys and policies are not what these tests read
    text = runbook(variant_apps(site, resolve(site, variant), registry), defaultdict(list))
    return text, runbook_steps(text)


def _gpu_pool(site):
    return next(p for c in resolve(site, "two-cluster").clusters for p in c.pools if p.hardware.gpu)


def test_a_new_components_steps_land_at_their_stages(site):
    _, shipped = _steps(site, "two-cluster")
    text, steps = _steps(site, "two-cluster", (*COMPONENTS, FanCheck))
    titles = [s.title for s in steps]
    assert [s.number for s in steps] == list(range(1, len(steps) + 1))  # numbered across the document
    ours = {"Fans of ai", "Fans of aistor", "Fans accepted on ai", "Fans logged on ai"}
    ours |= {"Fans accepted on aistor", "Fans logged on aistor"}
    assert [t for t in titles if t not in ours] == [s.title for s in shipped]
    # the checks once Argo CD syncs, cluster by cluster, each cluster's in sync order; then acceptance
    # (on `ai` the fan check, a service, syncs before the GPU health checks, a tenant of the GPUs)
    topology = titles.index(GpuOperator.topology_title(_gpu_pool(site)))
    assert titles[topology : topology + 7] == [
        GpuOperator.topology_title(_gpu_pool(site)),
        "Fans of ai",
        "Fans of aistor",
        "Fans accepted on ai",
        "Fans logged on ai",
        GpuHealth.burn_in_title(_gpu_pool(site)),
        "Fans accepted on aistor",
    ]
    by_title = {s.title: s for s in steps}
    assert by_title["Fans of aistor"].after_app == "aistor-fans"
    # a part is opened once for the steps that share it: its cluster is where their commands run
    assert text.count("## Fans on `ai`") == text.count("## Fans on `aistor`") == 1
    assert by_title["Fans logged on aistor"].cluster == "aistor"
    assert by_title["Fans logged on ai"].cluster == "ai"


def test_the_shipped_components_declare_their_steps(site):
    _, steps = _steps(site, "two-cluster")
    gpu = _gpu_pool(site)
    cni = [s for s in steps if s.title == "Primary CNI: Cilium, rendered from its chart"]
    assert [s.cluster for s in cni] == ["ai", "aistor"]  # the last step of each cluster's bring-up
    (burn_in,) = [s for s in steps if s.title == GpuHealth.burn_in_title(gpu)]
    assert burn_in.cluster == "ai" and burn_in.after_app == f"ai-{GpuHealth.name}"
    (topology,) = [s for s in steps if s.title == GpuOperator.topology_title(gpu)]
    assert topology.after_app == f"ai-{GpuOperator.name}"
    assert "bash two-cluster/kubeadm/ai/fabric-topology-gpu.sh" in topology.body.replace("dist/", "")
    (drives,) = [s for s in steps if s.title == "AIStor drives"]  # in the frame's part of the store
    assert drives.cluster == "aistor" and drives.after_app == f"aistor-{AIStorVolumeManager.name}"
    assert "kubectl directpv discover --nodes 'st{01...30}'" in drives.body
    one = next(ctx for ctx in variant_apps(site, resolve(site, "one-cluster")).contexts)
    assert [s.stage for s in one.get(Cilium).operator_steps(one)] == [Stage.POD_NETWORK]


def test_a_cluster_without_the_component_has_none_of_its_steps(site):
    without = tuple(c for c in COMPONENTS if c is not GpuHealth)
    text, steps = _steps(site, "two-cluster", without)
    assert "GPU burn-in" not in "".join(s.title for s in steps)
    assert "## GPU burn-in" not in text


class FanRunbook(FanCheck):
    """The fan check with a Day 2 section of its own."""

    name = "fan-runbook"
    namespace = "fan-runbook"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        return [OperatorStep(Stage.DAY_2, f"A fan lost on `{scope.cluster.name}`", "\nreplace the fan.\n")]


def test_a_new_components_day_2_section_follows_the_site_wide_ones(site):
    text, _ = _steps(site, "one-cluster", (*COMPONENTS, FanRunbook))
    day2 = text[text.index("## Day 2") :]
    assert "### A fan lost on `ai`\n\nreplace the fan.\n" in day2
    # after the site-wide sections; the databases' (in sync order, services) around it
    assert day2.index("### After losing AIStor") < day2.index("### A fan lost on `ai`")
    shipped, _ = _steps(site, "one-cluster")
    assert text.replace("### A fan lost on `ai`\n\nreplace the fan.\n\n", "") == shipped


def test_a_day_2_section_that_waits_on_an_app_is_refused(site):
    class Waiting(FanRunbook):
        def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
            return [OperatorStep(Stage.DAY_2, "Fans", "wait.", after="ai-fans")]

    with pytest.raises(CompositionError, match="Fans: a section of Day 2 has no `after` or `part`"):
        _steps(site, "one-cluster", (*COMPONENTS, Waiting))


def test_the_databases_declare_their_day_2_sections(site):
    text, _ = _steps(site, "two-cluster")
    for database in ("grafana-db", "harbor-db"):
        lost = text.index(f"### {PostgresDatabase.lost_node_title(database, 'ai')}\n")
        restore = text.index(f"### {PostgresDatabase.restore_title(database, 'ai')}\n")
        assert text.index("## Day 2") < lost < restore
        assert f"delete pvc {database}-{PostgresDatabase.instance_placeholder} " in text[lost:restore]


class FanBackups(FanCheck):
    """A component of every cluster with a backup section and a repair section of Day 2."""

    name = "fan-backups"
    namespace = "fan-backups"

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        return [
            OperatorStep(Stage.DAY_2_BACKUPS, "Fan settings: backup", "\nsave the fan curves.\n"),
            OperatorStep(Stage.DAY_2_REPAIRS, f"A fan replaced on `{scope.cluster.name}`", "swap it."),
        ]


def test_day_2_sections_land_at_their_stage_once_for_the_variant(site):
    text, _ = _steps(site, "two-cluster", (*COMPONENTS, FanBackups))
    heads = [line for line in text.splitlines() if line.startswith("### ") and not line[4].isdigit()]
    # repairs after taking a GPU node out, each cluster's; backups after the GitOps alerts, once
    assert (
        heads.index("### A fan replaced on `ai`")
        == heads.index("### Taking a GPU node out (`ai`, pool gpu)") + 1
    )
    assert heads.index("### A fan replaced on `aistor`") < heads.index("### Adding hosts")
    assert heads.count("### Fan settings: backup") == 1
    backups = heads[
        heads.index("### When Argo CD alerts") + 1 : heads.index(
            "### Restore drill from the second target (every quarter)"
        )
    ]
    assert sorted(backups) == sorted(
        [
            "### etcd: snapshot and restore",
            "### Velero: restore, and the monthly drill",
            "### Fan settings: backup",
        ]
    )  # in sync order
    assert backups.index("### etcd: snapshot and restore") < backups.index(
        "### Velero: restore, and the monthly drill"
    )
    shipped, _ = _steps(site, "two-cluster")
    assert heads.count("### etcd: snapshot and restore") == 1  # every cluster runs the backups: once
    assert "### Replacing an AIStor drive or server (`aistor`, pool storage)" in shipped
