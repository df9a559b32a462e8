"""The RUNBOOK's day-2 procedures come from the model: budgets, batch sizes and etcd membership change
with the pools, and none of it is replayed as a bring-up step."""

from __future__ import annotations

from sitegen.compose.apps import variant_apps
from sitegen.compose.day2 import day2
from sitegen.model import load_site, resolve
from sitegen.tree.runbook import runbook_steps

from .conftest import DIST, edit_yaml


def text(config) -> str:
    site = load_site(config)
    return day2(variant_apps(site, resolve(site, "two-cluster")))


def test_the_procedures_follow_the_pools(config_copy):
    before = text(config_copy)
    assert "`gpu` (12 of gpu01 ... gpu12): at most **11** down" in before
    assert "`storage/pool-0` (30 servers of storage): at most **2** down" in before
    assert "pool `storage` (30 nodes): 2 at a time" in before

    def fewer_gpus_more_storage(pools):
        pools["gpu"]["count"] = 8
        pools["gpu"]["hosts"] = [{"names": "gpu{01..08}", "first_address": "10.20.1.101"}]
        pools["storage"]["count"] = 33
        pools["storage"]["hosts"].append({"names": "st{31..33}", "first_address": "10.20.2.31"})

    edit_yaml(config_copy, "pools.yaml", fewer_gpus_more_storage)
    edit_yaml(config_copy, "storage.yaml", lambda s: s["aistor"]["server_pools"].append({"servers": 3}))
    after = text(config_copy)
    assert "`gpu` (8 of gpu01 ... gpu08): at most **7** down" in after
    assert "pool `gpu` (8 nodes): 7 at a time" in after
    # pool-1's 12-drive sets hold 4 drives on each of its 3 servers: one may go, so the storage
    # pool's upgrade batch drops to one node
    assert "`storage/pool-1` (3 servers of storage): at most **1** down" in after
    assert "pool `storage` (33 nodes): 1 at a time" in after


def test_day_two_is_in_the_runbook_and_not_replayed():
    runbook = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    day_two = runbook.index("## Day 2")
    for heading in (
        "Taking a GPU node out",
        "Replacing an AIStor drive",
        "Upgrading Kubernetes",
        "etcd: snapshot and restore",
    ):
        assert runbook.index(heading) > day_two
    assert all(runbook.index(f"### {s.number}. ") < day_two for s in runbook_steps(runbook))


def test_etcd_is_snapshotted_into_aistor_from_every_control_plane(site):
    """The CronJob reads the certificates kubeadm writes for etcd, reaches the member on its node, runs
    only on the control plane, and its bucket, lifecycle rule and vault key are in the RUNBOOK."""
    import yaml

    for variant, clusters in (("one-cluster", ["ai"]), ("two-cluster", ["ai", "aistor"])):
        runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        backups = site.services.backups
        assert (
            f"mc ilm rule add --prefix etcd/ --expire-days {backups.etcd.retention_days} site/{backups.bucket}"
            in runbook
        )
        assert "vault kv put secret/aistor/users/etcd-backup" in runbook
        for cluster in clusters:
            (job,) = yaml.safe_load_all(
                (
                    DIST / variant / "apps" / cluster / "etcd-backup/etcd-backup.cronjob.etcd-backup.yaml"
                ).read_text()
            )
            assert job["spec"]["schedule"] == backups.etcd.schedule
            pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            assert pod["hostNetwork"] and pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
            (snapshot,) = pod["initContainers"]
            assert "--endpoints=https://127.0.0.1:2379" in snapshot["command"]
            host = sorted(v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v)
            assert host == [
                f"/etc/kubernetes/pki/etcd/{f}"
                for f in ("ca.crt", "healthcheck-client.crt", "healthcheck-client.key")
            ]
            env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
            assert (env["CLUSTER"], env["BUCKET"]) == (cluster, backups.bucket)


def test_velero_backs_up_each_cluster_into_aistor_by_namespace_class():
    """A location per cluster under velero/<cluster>/ with the AIStor CA by reference; the tenants'
    namespaces with CSI snapshots (PowerScale's class carries Velero's label), the site's with the
    cluster-scoped objects; the keys arrive before the server that mounts them."""
    import yaml

    for variant, cluster, tenants in (("one-cluster", "ai", ["ai-research"]), ("two-cluster", "aistor", [])):
        app = DIST / variant / "apps" / cluster / "velero"
        docs = [d for p in sorted(app.glob("velero.*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
        locations = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "BackupStorageLocation"}
        location, second = locations["aistor"], locations["powerscale"]
        assert location["objectStorage"]["prefix"] == f"velero/{cluster}" and location["default"]
        assert location["objectStorage"]["caCertRef"] == {"name": "aistor-ca", "key": "ca.crt"}
        # the second target: its own keys and CA, never the default
        assert second["objectStorage"]["prefix"] == f"velero/{cluster}" and not second["default"]
        assert second["credential"] == {"name": "velero-powerscale", "key": "cloud"}
        assert second["objectStorage"]["caCertRef"] == {"name": "backup-target-ca", "key": "ca.crt"}
        assert second["config"]["s3Url"] == "https://nfs.powerscale.hpc.example.internal:9021"
        schedules = {d["metadata"]["name"]: d["spec"]["template"] for d in docs if d["kind"] == "Schedule"}
        assert (
            schedules["platform"]["includeClusterResources"] and not schedules["platform"]["snapshotVolumes"]
        )
        if tenants:
            assert (
                schedules["tenants"]["includedNamespaces"] == tenants
                and schedules["tenants"]["snapshotVolumes"]
            )
            assert not set(tenants) & set(schedules["platform"]["includedNamespaces"])
        else:
            assert "tenants" not in schedules
        copy = schedules["powerscale"]
        assert copy["storageLocation"] == "powerscale" and not copy["snapshotVolumes"]
        assert copy["includedNamespaces"] == [
            *schedules["platform"]["includedNamespaces"],
            *(schedules["tenants"]["includedNamespaces"] if tenants else []),
        ]
    (snapshots,) = yaml.safe_load_all(
        (DIST / "one-cluster/apps/ai/powerscale/volumesnapshotclass.powerscale.yaml").read_text()
    )
    assert snapshots["metadata"]["labels"]["velero.io/csi-volumesnapshot-class"] == "true"
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    assert "vault kv put secret/aistor/users/velero" in runbook


def test_gpu_health_checks_run_last_and_fail_below_the_promised_bandwidth(site):
    """Queued at the lowest priority (below untagged batch work), over whole GPU nodes, failing under
    the configured share of the nodes' NDR bandwidth; the hub alerts on a failed or stale check."""
    import yaml

    from constructs.kueue import PRIORITIES
    from sitegen.components.gpu.gpu_health import GpuHealth

    assert PRIORITIES["health"][0] < min(v for k, (v, _) in PRIORITIES.items() if k != "health")
    assert PRIORITIES["health"][0] < 0
    app = DIST / "one-cluster/apps/ai/gpu-health"
    (nccl,) = yaml.safe_load_all((app / "gpu-health.cronjob.nccl-health.yaml").read_text())
    job = nccl["spec"]["jobTemplate"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "health"
    assert job["spec"]["completions"] == site.services.health.nccl.nodes
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    threshold = GpuHealth.expected_busbw_gbps(site, "gpu") * site.services.health.nccl.min_fraction
    assert float(env["MIN_BUSBW_GBPS"]) == round(threshold, 1) == 160.0  # 4 rails x 400 Gb/s, 80 %
    (rules,) = yaml.safe_load_all(
        (DIST / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml").read_text()
    )
    health = next(g for g in rules["spec"]["groups"] if g["name"] == "site-health")
    assert {r["alert"] for r in health["rules"]} == {"GpuHealthCheckFailed", "GpuHealthCheckStale"}
    assert all('namespace="gpu-health"' in r["expr"] for r in health["rules"])


def test_the_backup_bucket_is_versioned_and_locked_from_its_creation(site):
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    bucket = site.services.backups.bucket
    lock = site.storage.aistor.bucket_protection[bucket].lock_days
    create = runbook.index(f"mc mb --ignore-existing --with-lock site/{bucket}")
    assert create < runbook.index(f"mc retention set --default COMPLIANCE {lock}d site/{bucket}")
    assert f"mc version enable site/{bucket}" in runbook
    assert "mc mb --ignore-existing site/loki-chunks" in runbook  # rebuildable: no lock


def test_the_upgrade_installs_the_next_kubeadm_first(site, inputs):
    """The baseline holds kubeadm at the running minor, from that minor's repository: the upgrade points
    apt at the next minor's, takes the hold off, installs kubeadm, then upgrades; without the package
    step bringup stops on the first `kubeadm upgrade apply`."""
    from pathlib import PurePosixPath

    from .bringup_cases import ONE, blocked, run

    text = (DIST / ONE / "bootstrap/RUNBOOK.md").read_text()
    nxt = "v1." + str(int(site.versions.kubernetes_minor.split(".")[1]) + 1)
    order = [
        f"/kubernetes/core/stable/{nxt}/deb/ /' > /etc/apt/sources.list.d/kubernetes.list",
        "apt-mark unhold kubeadm && apt-get install -y kubeadm=",
        'kubeadm upgrade apply "v$NEXT"',
        "apt-get install -y kubelet=",
        "systemctl restart kubelet",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    prep = (DIST / ONE / "kubeadm/ai/host-prep-gpu.sh").read_text()
    assert (
        f"/kubernetes/core/stable/{site.versions.kubernetes_minor}/deb/ /' > /etc/apt/sources.list.d/kubernetes.list"
        in prep
    )
    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "bootstrap/RUNBOOK.md")
    texts[path] = texts[path].replace(
        "apt-mark unhold kubeadm && apt-get install -y kubeadm=", "apt-get install -y kubectl="
    )
    blocked(run(site, inputs, ONE, texts=texts), "kubeadm upgrade apply", "never takes the hold off kubeadm")


def test_removing_a_host_says_what_each_pool_asks_before_it_goes(config_copy):
    """A retired worker: drain, delete, reset, and its number in `skip:`; its pool's own care (local
    volumes go with it, a GPU node's jobs finish first, AIStor retires whole server pools)."""
    section = text(config_copy).split("### Removing a host\n", 1)[1].split("\n### ", 1)[0]
    assert "kubectl drain <host> --ignore-daemonsets" in section and "kubectl delete node <host>" in section
    assert "its pool's `skip:`" in section
    assert "- Pools gpu, infra: the volumes on its local NVMe (`local-nvme`) go with it" in section
    assert "- Pools gpu: take it out as in Taking a GPU node out first" in section
    assert "- Pool storage: a server never leaves an erasure-coded server pool alone" in section
    # the cache pools follow config
    edit_yaml(
        config_copy, "storage.yaml", lambda s: s["local_cache"].update(pools=["gpu", "infra", "compute"])
    )
    assert "- Pools compute, gpu, infra: the volumes on its local NVMe" in text(config_copy)


def test_adding_hosts_says_what_growth_may_move_and_how_it_is_acknowledged(config_copy):
    section = text(config_copy).split("### Adding hosts\n", 1)[1].split("\n### ", 1)[0]
    assert "S3 front doors, the load-balancer pool, the rails' IP blocks, the API endpoints" in section
    assert "`config/gitops.yaml` `acknowledged_moves`" in section


def test_the_control_planes_certificates_are_renewed_and_their_static_pods_restarted(site):
    """kubeadm's certificates last a year and renew with an upgrade: the RUNBOOK renews them by hand
    on every member of each cluster, one at a time, then restarts the static pods through their
    manifests (they read their certificates only at start), in the directory the kubelet watches."""
    from constructs.kube_vip import MANIFEST_DIR

    for variant in ("one-cluster", "two-cluster"):
        text = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        section = text.split("### The control plane's certificates", 1)[1].split("\n### ", 1)[0]
        layout = resolve(site, variant)
        for cluster in layout.clusters:
            assert f"- `{cluster.name}`: {cluster.control_plane.host_span}, one at a time" in section
        order = [
            "kubeadm certs renew all",
            f"mv {MANIFEST_DIR}/*.yaml",
            f"/*.yaml {MANIFEST_DIR}/",
            "kubectl",
        ]
        positions = [section.index(marker) for marker in order]
        assert positions == sorted(positions), section
        assert text.index("### Upgrading Kubernetes") < text.index("### The control plane's certificates")
