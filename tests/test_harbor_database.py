"""Harbor's database: CloudNativePG instances on as many nodes with synchronous standbys, the WAL archived
into AIStor and a logical dump on the second target, each watched; the loss of the primary's node
replayed by bringup with the RUNBOOK's section, and each part that keeps the commits put back out."""

from __future__ import annotations

import copy

import pytest
import yaml

from sitegen.check.bringup import database_day2
from sitegen.check.bringup.events import Stop
from sitegen.check.bringup.operators import CNPG_CLUSTER
from sitegen.compose.procedures.harbor_database import title

from .bringup_cases import ONE, TWO, installed, with_runbook_edited
from .conftest import DIST, validate

APP = "one-cluster/apps/ai/harbor-database"
RULES = "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml"


@pytest.fixture(scope="module")
def up(site, inputs):
    return {variant: installed(site, inputs, variant) for variant in (ONE, TWO)}


def lost(up, variant: str = ONE, *, database=None, runbook=None):
    """The primary's node lost on a copy of the installed variant, its Cluster or RUNBOOK edited first;
    the blocker's text (or None) and the simulation."""
    sim = copy.deepcopy(up[variant])
    hub = sim.clusters[sim.layout.hub.name]
    if database is not None:
        database(hub.find("Cluster", "harbor", "harbor-db").body)
    if runbook is not None:
        with_runbook_edited(sim, variant, runbook)
    sim.day2 = True
    try:
        database_day2.a_database_node_lost(sim)
    except Stop as stop:
        return str(stop.blocker), sim
    return None, sim


def instances(sim):
    hub = sim.clusters[sim.layout.hub.name]
    (w,) = [w for w in hub.workloads.values() if w.operator == CNPG_CLUSTER]
    return hub, w


@pytest.mark.parametrize("variant", [ONE, TWO])
def test_the_primarys_node_lost_loses_no_commit_and_harbor_comes_back(up, variant):
    hub, before = instances(up[variant])
    primary_node = sorted(before.placed)[0]
    blocker, sim = lost(up, variant)
    assert blocker is None, blocker
    (said,) = [e.what for e in sim.result.timeline if "promoted" in e.what]
    assert "with all 1000 acknowledged commits (lost: 0)" in said and "writes went on" in said
    assert "the apps of harbor Healthy" in said
    _, after = instances(sim)
    assert after.running and sum(after.placed.values()) == 3
    # the new instance is on a node that held none; the node joined again afterwards
    assert len(set(after.placed) - set(before.placed)) == 1
    assert primary_node in sim.clusters[hub.name].nodes


def test_asynchronous_standbys_lose_acknowledged_commits(up):
    def asynchronous(body):
        del body["spec"]["postgresql"]["synchronous"]

    blocker, _ = lost(up, database=asynchronous)
    assert blocker is not None
    assert "1000 of 1000 commits Harbor was told were committed are not on any standby" in blocker


def test_one_synchronous_standby_of_two_instances_stops_writes_until_the_new_instance():
    replication = database_day2.Replication(
        {
            "spec": {
                "postgresql": {"synchronous": {"method": "any", "number": 1, "dataDurability": "required"}}
            }
        },
        {1: "infra01", 2: "infra02"},
    )
    assert replication.commit(10, {1, 2}) is None
    assert replication.fail_over({2}) == 0
    assert "0 standby(s) run and each commit waits for 1" in replication.commit(1, {2})
    replication.nodes[3] = "infra03"
    assert replication.commit(1, {2, 3}) is None and replication.acknowledged == 11


def test_preferred_durability_acknowledges_alone_and_a_second_loss_loses_it():
    replication = database_day2.Replication(
        {
            "spec": {
                "postgresql": {"synchronous": {"method": "any", "number": 1, "dataDurability": "preferred"}}
            }
        },
        {1: "infra01", 2: "infra02"},
    )
    replication.commit(10, {1, 2})
    assert replication.fail_over({2}) == 0
    assert replication.commit(5, {2}) is None  # the promoted one alone acknowledges
    replication.nodes[3] = "infra03"
    assert replication.fail_over({3}) == 15  # the new standby never had them


@pytest.mark.parametrize(
    ("line", "left"),
    [
        (
            "kubectl -n harbor delete pvc harbor-db-<n> harbor-db-<n>-wal --wait=false\n",
            "harbor-db-1, harbor-db-1-wal",
        ),
        ("harbor-db-<n> harbor-db-<n>-wal --wait=false", "harbor-db-1-wal"),
    ],
)
def test_the_section_must_delete_every_claim_of_the_lost_instance(up, line, left):
    replacement = "" if line.endswith("\n") else "harbor-db-<n> --wait=false"

    def edit(text: str) -> str:
        start = text.index(f"### {title('ai')}")
        end = text.index("\n### ", start + 1)
        assert line in text[start:end]
        return text[:start] + text[start:end].replace(line, replacement) + text[end:]

    blocker, _ = lost(up, runbook=edit)
    assert blocker is not None and f"{left} stay, so harbor-db-1 waits for" in blocker


def test_drains_wait_for_the_instances_on_local_nvme(up):
    """The node-local classes come from the StorageClasses' provisioners (TopoLVM, DirectPV): the
    database's instances and Loki's writers are bound to their nodes, Harbor's jobservice is not."""
    hub, w = instances(up[ONE])
    assert hub.node_local(w)
    by_ref = {x.template.ref: x for x in hub.workloads.values()}
    assert hub.node_local(by_ref["StatefulSet loki/loki-write"])
    assert not hub.node_local(by_ref["Deployment harbor/harbor-jobservice"])


def test_harbor_has_no_database_of_its_own_and_reads_the_clusters_primary():
    harbor = DIST / "one-cluster/apps/ai/harbor"
    assert not list(harbor.glob("*statefulset.harbor-database*"))
    (core,) = yaml.safe_load_all((harbor / "harbor.configmap.harbor-core.yaml").read_text())
    assert core["data"]["POSTGRESQL_HOST"] == "harbor-db-rw"
    assert core["data"]["POSTGRESQL_SSLMODE"] == "require"
    (cluster,) = yaml.safe_load_all((DIST / APP / "harbor.cluster.harbor-db.yaml").read_text())
    spec = cluster["spec"]
    assert spec["instances"] == 3 and spec["affinity"]["podAntiAffinityType"] == "required"
    assert spec["postgresql"]["synchronous"] == {"method": "any", "number": 1, "dataDurability": "required"}
    assert [p["isWALArchiver"] for p in spec["plugins"]] == [True]


def test_a_database_without_a_copy_outside_aistor_is_refused(tree):
    (tree / APP / "harbor.cronjob.harbor-db-dump-powerscale.yaml").unlink()
    result = validate(tree)
    found = [line for line in result.stdout.splitlines() if "BAK-001" in line]
    assert len(found) == 1, found
    assert "Cluster harbor/harbor-db" in found[0]
    assert "database harbor/harbor-db of cluster ai has no copy outside AIStor" in found[0]


def test_base_backups_without_an_alert_are_refused(tree):
    path = tree / RULES
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for group in docs[0]["spec"]["groups"]:
        group["rules"] = [r for r in group["rules"] if r.get("alert") != "HarborDbBaseBackupStale"]
    path.write_text(yaml.safe_dump_all(docs))
    result = validate(tree)
    (found,) = [line for line in result.stdout.splitlines() if "BAK-002" in line]
    assert "ScheduledBackup harbor/harbor-db" in found
    assert "barman_cloud_cloudnative_pg_io_last_available_backup_timestamp" in found


def test_a_volume_no_component_states_is_refused(tree):
    """Harbor's own database as the chart shipped it (a StatefulSet on one node's NVMe, no copy): a
    volume nobody stated."""
    path = tree / "one-cluster/apps/ai/harbor/harbor.statefulset.harbor-redis.yaml"
    (redis,) = yaml.safe_load_all(path.read_text())
    redis["metadata"]["name"] = "harbor-database"
    (path.parent / "harbor.statefulset.harbor-database.yaml").write_text(yaml.safe_dump(redis))
    result = validate(tree)
    (found,) = [line for line in result.stdout.splitlines() if "DATA-001" in line]
    assert "StatefulSet harbor/harbor-database" in found
    assert "volume data of harbor-database (local-nvme, 1 x 5G) is stated by no component of harbor" in found


def test_every_stated_volume_is_in_the_plan_with_its_copies_or_why_none(site):
    from sitegen.report.recovery import stated_volumes

    found = {(v.app, v.workload): v for v in stated_volumes(site)}
    assert set(found) >= {("harbor-database", "harbor-db"), ("grafana", "grafana"), ("aistor", "aistor")}
    database = found[("harbor-database", "harbor-db")]
    assert len(database.copies) == 3 and "s3://site-backups-second-harbor-db/" in database.copies[2]
    assert found[("grafana", "grafana")].without_copy.startswith(
        "dashboards and data sources are provisioned"
    )
    assert database.where == "one-cluster/ai, two-cluster/ai"
