"""The site's databases (Harbor's, Grafana's): CloudNativePG instances on as many nodes with synchronous standbys, the WAL archived
into AIStor and a logical dump on the second target, each watched; the loss of the primary's node
replayed by bringup with the RUNBOOK's section, and each part that keeps the commits put back out."""

from __future__ import annotations

import copy

import pytest
import yaml

from sitegen.check.bringup import database_day2
from sitegen.check.bringup.events import Stop
from sitegen.check.bringup.operators import CNPG_CLUSTER
from sitegen.components.storage.database import PostgresDatabase

from .bringup_cases import ONE, TWO, installed, with_runbook_edited
from .conftest import DIST, edit_yaml, invoke_sitegen, validate

APP = "one-cluster/apps/ai/harbor-database"
RULES = "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml"


@pytest.fixture(scope="module")
def up(site, inputs):
    return {variant: installed(site, inputs, variant) for variant in (ONE, TWO)}


def lost(up, variant: str = ONE, *, database=None, runbook=None):
    """The primary's node lost on a copy of the installed variant, its Cluster or RUNBOOK edited first;
    the blocker's text (or None) and the simulation."""
    sim = copy.deepcopy(up[variant])
    hub = sim.state.clusters[sim.state.layout.hub.name]
    if database is not None:
        database(hub.find("Cluster", "harbor", "harbor-db").body)
    if runbook is not None:
        with_runbook_edited(sim, variant, runbook)
    sim.state.day2 = True
    try:
        database_day2.a_database_node_lost(sim)
    except Stop as stop:
        return str(stop.blocker), sim
    return None, sim


def instances(sim, name: str = "harbor-db"):
    hub = sim.state.clusters[sim.state.layout.hub.name]
    (w,) = [w for w in hub.workloads.values() if w.operator == CNPG_CLUSTER and w.template.name == name]
    return hub, w


@pytest.mark.parametrize("variant", [ONE, TWO])
def test_the_primarys_node_lost_loses_no_commit_and_harbor_comes_back(up, variant):
    hub, before = instances(up[variant])
    primary_node = sorted(before.placed)[0]
    blocker, sim = lost(up, variant)
    assert blocker is None, blocker
    said = {e.what.split("-", 1)[0]: e.what for e in sim.state.result.timeline if "promoted" in e.what}
    assert sorted(said) == ["grafana", "harbor"]
    for service, what in said.items():
        assert "with all 1000 acknowledged commits (lost: 0)" in what and "writes went on" in what
        assert f"the apps of {service} Healthy" in what
    _, after = instances(sim)
    assert after.running and sum(after.placed.values()) == 3
    # the new instance is on a node that held none; the node joined again afterwards
    assert len(set(after.placed) - set(before.placed)) == 1
    assert primary_node in sim.state.clusters[hub.name].nodes


def test_asynchronous_standbys_lose_acknowledged_commits(up):
    def asynchronous(body):
        del body["spec"]["postgresql"]["synchronous"]

    blocker, _ = lost(up, database=asynchronous)
    assert blocker is not None
    assert "1000 of 1000 commits its clients were told were committed are not on any standby" in blocker


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
        start = text.index(f"### {PostgresDatabase.lost_node_title('harbor-db', 'ai')}")
        end = text.index("\n### ", start + 1)
        assert line in text[start:end]
        return text[:start] + text[start:end].replace(line, replacement) + text[end:]

    blocker, _ = lost(up, runbook=edit)
    assert blocker is not None and f"{left} stay, so harbor-db-1 waits for" in blocker


def test_drains_wait_for_the_instances_on_local_nvme(up):
    """The node-local classes come from the StorageClasses' provisioners (TopoLVM, DirectPV): the
    database's instances and Loki's writers are bound to their nodes, Harbor's jobservice is not."""
    hub, w = instances(up[ONE])
    assert hub.scheduler.node_local(w)
    by_ref = {x.template.ref: x for x in hub.workloads.values()}
    assert hub.scheduler.node_local(by_ref["StatefulSet loki/loki-write"])
    assert not hub.scheduler.node_local(by_ref["Deployment harbor/harbor-jobservice"])


def test_harbor_and_grafana_keep_their_state_in_their_databases_alone():
    """Harbor's caches in emptyDir (its images in AIStor), Grafana's SQLite gone: no volume of theirs
    is node-local any more, and each reads its Cluster's primary."""
    harbor = DIST / "one-cluster/apps/ai/harbor"
    assert not list(harbor.glob("*statefulset.harbor-database*"))
    for name in ("harbor-redis", "harbor-trivy"):
        (sts,) = yaml.safe_load_all((harbor / f"harbor.statefulset.{name}.yaml").read_text())
        assert "volumeClaimTemplates" not in sts["spec"], name
    grafana = DIST / "one-cluster/apps/ai/grafana"
    assert not list(grafana.glob("*persistentvolumeclaim*"))
    (deployment,) = yaml.safe_load_all((grafana / "grafana.deployment.grafana.yaml").read_text())
    env = {
        e["name"]: e for c in deployment["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])
    }
    assert env["GF_DATABASE_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "grafana-db-app",
        "key": "password",
    }
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
    redis["spec"]["template"]["spec"]["volumes"] = [
        v for v in redis["spec"]["template"]["spec"]["volumes"] if v["name"] != "data"
    ]
    redis["spec"]["volumeClaimTemplates"] = [{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-nvme", "resources": {"requests": {"storage": "5G"}}},
    }]  # fmt: skip
    (path.parent / "harbor.statefulset.harbor-database.yaml").write_text(yaml.safe_dump(redis))
    result = validate(tree)
    (found,) = [line for line in result.stdout.splitlines() if "DATA-001" in line]
    assert "StatefulSet harbor/harbor-database" in found
    assert "volume data of harbor-database (local-nvme, 1 x 5G) is stated by no component of harbor" in found


def test_every_stated_volume_is_in_the_plan_with_its_copies_or_why_none(site):
    from sitegen.report.recovery import stated_volumes

    found = {(v.app, v.workload): v for v in stated_volumes(site)}
    assert set(found) >= {
        ("harbor-database", "harbor-db"),
        ("grafana-database", "grafana-db"),
        ("aistor", "aistor"),
    }
    database = found[("harbor-database", "harbor-db")]
    assert len(database.copies) == 3 and "s3://site-backups-second-harbor-db/" in database.copies[2]
    assert found[("loki", "loki-write")].data == "logs" and found[("models", "llama-3-3-70b")].data == "cache"
    assert {v.data for v in found.values() if not v.copies} <= {"cache", "metrics", "logs"}
    assert not any(app in ("harbor", "grafana") for app, _ in found)  # their state is in their databases
    assert database.where == "one-cluster/ai, two-cluster/ai"


@pytest.mark.parametrize("app", ["harbor-database", "grafana-database"])
def test_every_secret_a_database_reads_is_made_beside_it(app):
    """The Cluster's bootstrap secret and the plugin's keys and CA are in its own app: the operator and
    the plugin read them from its namespace."""
    docs = [
        d
        for p in (DIST / "one-cluster/apps/ai" / app).glob("*.yaml")
        for d in yaml.safe_load_all(p.read_text())
        if d
    ]
    made = {d["spec"]["target"]["name"] for d in docs if d["kind"] == "ExternalSecret"}
    (store,) = [d for d in docs if d["kind"] == "ObjectStore"]
    config = store["spec"]["configuration"]
    read = {config["endpointCA"]["name"], *(ref["name"] for ref in config["s3Credentials"].values())}
    (cluster,) = [d for d in docs if d["kind"] == "Cluster"]
    read.add(cluster["spec"]["bootstrap"]["initdb"]["secret"]["name"])
    assert read <= made, read - made


def test_state_without_a_copy_is_refused(config_copy, tmp_path):
    """Harbor's images on a PowerScale class: state (pushed images have no other source) that nothing
    copies."""
    edit_yaml(config_copy, "services.yaml", lambda d: d["registry"].update(storage="powerscale"))
    out = tmp_path / "dist"
    assert invoke_sitegen("synth", "--config", config_copy, "--out", out, "--variant", ONE).exit_code == 0
    result = invoke_sitegen("validate", "--config", config_copy, "--dist", out)
    (found,) = [line for line in result.stdout.splitlines() if "DATA-" in line]
    assert "PersistentVolumeClaim harbor/harbor-registry: DATA-002" in found
    assert "harbor-registry holds state (the image layers and manifests) with no copy" in found
