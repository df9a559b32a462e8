"""Operations that hold (issue 27), checked on the rendered dist/."""

from __future__ import annotations

import yaml

from constructs.serving import MODEL_STARTUP_SECONDS
from sitegen.components.gpu.kueue import PULL_SECONDS

from .conftest import DIST


def test_whole_node_jobs_give_their_gpus_back_when_a_node_is_missing():
    """Kueue's waitForPodsReady (config v1beta2: present means on): a workload whose pods are not all
    Ready within the timeout is evicted and requeued with backoff, its quota freed for others."""
    for variant in ("one-cluster", "two-cluster"):
        path = DIST / variant / "apps/ai/kueue/kueue-system.configmap.kueue-manager-config.yaml"
        (config_map,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
        config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
        assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
        wait = config["waitForPodsReady"]
        assert "enable" not in wait  # v1beta1's switch; v1beta2 rejects unknown fields
        # the image pulls, then a model server's load: Kueue's one timeout must allow the slowest start
        assert (
            wait["timeout"] == wait["recoveryTimeout"] == f"{(PULL_SECONDS + MODEL_STARTUP_SECONDS) // 60}m"
        )
        assert wait["requeuingStrategy"]["timestamp"] == "Eviction"
        assert (
            wait["requeuingStrategy"]["backoffBaseSeconds"] <= wait["requeuingStrategy"]["backoffMaxSeconds"]
        )


def test_tenant_backups_skip_the_volumes_no_snapshot_can_take():
    """The nightly tenant backup snapshots volumes with CSI; a claim whose driver has no
    VolumeSnapshotClass (TopoLVM's local cache) would fail it: the Schedule's volume policy skips every
    StorageClass of the cluster without one."""
    from sitegen.tree.documents import load_tree

    from .conftest import DIST

    docs = load_tree(DIST)
    schedules = [d for d in docs if d.kind == "Schedule" and d.name == "tenants"]
    assert schedules
    for schedule in schedules:
        here = [d for d in docs if d.variant == schedule.variant and d.cluster == schedule.cluster]
        snapshot_drivers = {d.body["driver"] for d in here if d.kind == "VolumeSnapshotClass"}
        classes = {d.name: d.body["provisioner"] for d in here if d.kind == "StorageClass"}
        without = {name for name, driver in classes.items() if driver not in snapshot_drivers}
        assert without, "the cluster has a class without snapshots (TopoLVM's local-nvme)"
        ref = schedule.body["spec"]["template"]["resourcePolicy"]
        assert ref["kind"] == "configmap"
        (config_map,) = [d for d in here if d.kind == "ConfigMap" and d.name == ref["name"]]
        policy = yaml.safe_load(config_map.body["data"]["policy.yaml"])
        skipped = {
            c
            for p in policy["volumePolicies"]
            if p["action"]["type"] == "skip"
            for c in p["conditions"]["storageClass"]
        }
        assert without <= skipped, (schedule.file, without - skipped)


def test_the_longest_gap_of_a_schedule():
    from sitegen.model.cron import longest_gap_seconds

    assert longest_gap_seconds("0 */6 * * *") == 6 * 3600
    assert longest_gap_seconds("30 1 * * *") == 24 * 3600
    assert longest_gap_seconds("0 3 * * 0") == 7 * 86400
    assert longest_gap_seconds("0 1,5 * * *") == 20 * 3600  # 05:00 to 01:00 the next day
    assert longest_gap_seconds("0 2 * * 1-5") == 3 * 86400  # Friday to Monday
    import pytest

    with pytest.raises(ValueError, match="day of month"):
        longest_gap_seconds("0 0 1 * *")


def test_every_backup_alerts_when_it_fails_or_goes_stale(site):
    """The etcd snapshots, the PKI archive and each Velero schedule, on AIStor and on the second
    target: failed, stale (no success for longer than the
    schedule's longest gap and an hour, computed from config) and never succeeded."""
    from sitegen.tree.documents import load_tree

    from .conftest import DIST

    backups = site.services.backups
    second = backups.second
    expected = {
        "EtcdBackup": backups.etcd.longest_gap_seconds + 3600,
        "VeleroBackupPlatform": backups.velero.platform.longest_gap_seconds + 3600,
        "VeleroBackupTenants": backups.velero.tenants.longest_gap_seconds + 3600,
        f"EtcdBackup{second.name.title()}": second.etcd.longest_gap_seconds + 3600,
        f"PkiBackup{second.name.title()}": second.pki.longest_gap_seconds + 3600,
        f"VeleroBackup{second.name.title()}": second.velero.longest_gap_seconds + 3600,
    }
    rules = {
        r["alert"]: r
        for d in load_tree(DIST)
        if d.variant == "two-cluster" and d.kind == "PrometheusRule" and d.name == "site"
        for g in d.body["spec"]["groups"]
        for r in g["rules"]
    }
    for prefix, seconds in expected.items():
        assert {f"{prefix}Failed", f"{prefix}Stale", f"{prefix}Missing"} <= set(rules), prefix
        assert rules[f"{prefix}Stale"]["expr"].endswith(f"> {seconds}")
        assert rules[f"{prefix}Missing"]["for"] == f"{seconds // 3600}h"


def test_a_model_server_a_drain_may_evict_is_refused(tree):
    """The GPU budget keeps a node per engine replica (plan, RUNBOOK): without a PodDisruptionBudget
    that keeps every replica, a drain inside that budget evicts the model server (PDB-001)."""
    import yaml

    from .conftest import validate

    models = tree / "one-cluster/apps/ai/models"
    (budget,) = models.glob("*.poddisruptionbudget.*.yaml")
    doc = yaml.safe_load(budget.read_text())
    assert doc["spec"]["maxUnavailable"] == 0
    doc["spec"]["maxUnavailable"] = 1
    budget.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert result.exit_code == 1
    (found,) = [line for line in result.stdout.splitlines() if "PDB-001" in line]
    assert "StatefulSet ai-research/llama-3-3-70b" in found and "no PodDisruptionBudget keeps its 1" in found
    budget.unlink()
    assert "PDB-001" in validate(tree).stdout


def test_a_spoke_whose_token_lapsed_alerts(docs, site):
    """The spoke's token expires after gitops.argocd.spoke_token_days: Argo CD's controller reports
    the spoke disconnected (argocd_cluster_connection_status), scraped by a PodMonitor whose port and
    labels are the rendered controller's; one cluster has no spoke and no such alert."""
    rules = {
        d.variant: [r for g in d.body["spec"]["groups"] for r in g["rules"]]
        for d in docs
        if d.kind == "PrometheusRule" and d.name == "site"
    }
    (alert,) = [r for r in rules["two-cluster"] if r.get("alert") == "ArgoCdClusterDisconnected"]
    assert alert["expr"] == "argocd_cluster_connection_status == 0"
    assert f"{site.gitops.argocd.spoke_token_days} days" in alert["annotations"]["summary"]
    assert not [r for r in rules["one-cluster"] if r.get("alert", "").startswith("ArgoCdCluster")]
    (monitor,) = [
        d
        for d in docs
        if d.variant == "two-cluster" and d.kind == "PodMonitor" and d.name == "argocd-application-controller"
    ]
    (controller,) = [
        d for d in docs
        if d.variant == "two-cluster" and d.kind == "StatefulSet" and d.name == "argocd-application-controller"
    ]  # fmt: skip
    pod = controller.body["spec"]["template"]
    assert monitor.body["spec"]["namespaceSelector"]["matchNames"] == [controller.namespace]
    assert monitor.body["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (endpoint,) = monitor.body["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}


def test_the_burn_in_runs_on_its_cordoned_node_only(docs, site):
    """Suspended (a template the RUNBOOK makes Jobs of), pinned to its host, all its GPUs, the level of
    config; only its namespace may tolerate a cordon, no tenant's."""
    jobs = {
        d.name: d
        for d in docs
        if d.variant == "one-cluster" and d.kind == "CronJob" and d.name.startswith("burn-in-")
    }
    hosts = [f"gpu{i:02d}" for i in range(1, 13)]
    assert sorted(jobs) == [f"burn-in-{h}" for h in hosts]
    for host in hosts:
        spec = jobs[f"burn-in-{host}"].body["spec"]
        assert spec["suspend"] is True
        # queued like the periodic checks: its GPUs (and a pair's neighbour's) count in the pool's quota
        labels = spec["jobTemplate"]["metadata"]["labels"]
        assert labels == {
            "kueue.x-k8s.io/queue-name": "gpu-health",
            "kueue.x-k8s.io/priority-class": "health",
        }
        pod = spec["jobTemplate"]["spec"]["template"]["spec"]
        (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"] == [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}
        ]
        assert {
            "key": "node.kubernetes.io/unschedulable",
            "operator": "Exists",
            "effect": "NoSchedule",
        } in pod["tolerations"]
        (container,) = pod["containers"]
        assert str(container["resources"]["limits"]["nvidia.com/gpu"]) == "8"
        assert {"name": "LEVEL", "value": str(site.services.health.burn_in_level)} in container["env"]
    namespaces = {d.name: d.body for d in docs if d.variant == "one-cluster" and d.kind == "Namespace"}
    whitelist = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
    assert "unschedulable" in namespaces["gpu-health"]["metadata"]["annotations"][whitelist]
    assert "unschedulable" not in namespaces["ai-research"]["metadata"]["annotations"][whitelist]


def test_burn_in_pairs_form_a_ring_in_rounds_of_disjoint_pairs():
    from constructs.gpu_health import pair_rounds

    assert pair_rounds(["a"]) == []
    assert pair_rounds(["a", "b"]) == [[("a", "b")]]
    for n in range(3, 18):
        hosts = [f"h{i}" for i in range(n)]
        rounds = pair_rounds(hosts)
        pairs = [p for r in rounds for p in r]
        assert sorted(pairs) == sorted((hosts[i], hosts[(i + 1) % n]) for i in range(n))
        assert len(rounds) == (2 if n % 2 == 0 else 3)
        for round_ in rounds:
            nodes = [h for pair in round_ for h in pair]
            assert len(nodes) == len(set(nodes)), (n, round_)


def test_each_gpu_node_is_measured_with_both_ring_neighbours(docs, site):
    """Each pair is pinned to exactly its two hosts, tolerates their cordon, and fails below the
    fraction of the nodes' NDR bandwidth the config promises."""
    from sitegen.components.gpu.gpu_health import GpuHealth

    pairs = {
        d.name: d.body["spec"]
        for d in docs
        if d.variant == "one-cluster" and d.kind == "CronJob" and d.name.startswith("nccl-pair-")
    }
    hosts = [f"gpu{i:02d}" for i in range(1, 13)]
    minimum = GpuHealth.expected_busbw_gbps(site, "gpu") * site.services.health.nccl.min_fraction
    for i, host in enumerate(hosts):
        peer = hosts[(i + 1) % len(hosts)]
        spec = pairs.pop(f"nccl-pair-{host}-{peer}")
        assert spec["suspend"] is True
        job = spec["jobTemplate"]["spec"]
        assert (job["completions"], job["parallelism"], job["completionMode"]) == (2, 2, "Indexed")
        pod = job["template"]["spec"]
        (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"] == [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [host, peer]}
        ]
        assert "node.kubernetes.io/unschedulable" in {t.get("key") for t in pod["tolerations"]}
        (container,) = pod["containers"]
        assert str(container["resources"]["limits"]["nvidia.com/gpu"]) == "8"
        assert {"name": "MIN_BUSBW_GBPS", "value": f"{minimum:.1f}"} in container["env"]
        assert "--nnodes=2" in container["command"]
    assert pairs == {}
