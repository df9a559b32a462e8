"""A scheduled backup that never succeeded in one cluster is alerted for that cluster. The hub evaluates
every cluster's series (the spokes write theirs to it); `absent()` over them all was silent as long as
any cluster's copy had succeeded once, so a spoke whose etcd snapshots never worked raised nothing. And
Velero's last status, 0 from its start, is a failure only beside a recorded one.

The rules are evaluated here on series as kube-state-metrics writes them (a CronJob's
`kube_cronjob_created` always; its `kube_cronjob_status_last_successful_time` only once a Job
succeeded), by the three PromQL forms they use; not a PromQL engine."""

from __future__ import annotations

import re

from sitegen.tree.documents import load_tree

from .conftest import DIST

CRONJOB = {"namespace": "etcd-backup", "cronjob": "etcd-backup"}


def _select(selector: str, series: list[dict[str, str]]) -> list[dict[str, str]]:
    name, matchers = re.fullmatch(r"(\w+)\{(.*)\}", selector.strip()).groups()
    wanted = re.findall(r'(\w+)(=~|=)"([^"]*)"', matchers)
    return [
        s
        for s in series
        if s["__name__"] == name
        and all(re.fullmatch(v, s.get(k, "")) if op == "=~" else s.get(k) == v for k, op, v in wanted)
    ]


def _firing(expr: str, series: list[dict[str, str]]) -> list[str]:
    """The clusters a rule fires for ('' for the hub's own series, which carry no cluster label)."""
    if expr.startswith("absent("):
        return [] if _select(expr[len("absent(") : -1], series) else ["(no labels)"]
    left, right = re.fullmatch(
        r"count by \(cluster\) \((.+?)\) unless on \(cluster\) count by \(cluster\) \((.+)\)", expr
    ).groups()
    clusters = lambda sel: {s.get("cluster", "") for s in _select(sel, series)}  # noqa: E731
    return sorted(clusters(left) - clusters(right))


def _rules(variant: str, alert: str) -> list[dict]:
    return [
        r
        for d in load_tree(DIST)
        if d.kind == "PrometheusRule" and d.variant == variant
        for g in d.body["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == alert
    ]


def _rule(variant: str, alert: str) -> dict:
    (rule,) = _rules(variant, alert)
    return rule


def _series(name: str, cluster: str) -> dict[str, str]:
    return {"__name__": name, **CRONJOB, **({"cluster": cluster} if cluster else {})}


def test_a_spoke_whose_snapshots_never_succeeded_is_alerted_though_the_hubs_did():
    rule = _rule("two-cluster", "EtcdBackupMissing")
    hub_ok = [
        _series("kube_cronjob_created", ""),
        _series("kube_cronjob_created", "aistor"),
        _series("kube_cronjob_status_last_successful_time", ""),
    ]
    assert _firing(rule["expr"], hub_ok) == ["aistor"]
    assert "{{ $labels.cluster }}" in rule["annotations"]["summary"]
    both_ok = [*hub_ok, _series("kube_cronjob_status_last_successful_time", "aistor")]
    assert _firing(rule["expr"], both_ok) == []
    assert _firing(rule["expr"], hub_ok[:2]) == ["", "aistor"]  # neither yet: each its own alert
    # the rule as it was: silent while the hub's copy had succeeded
    old = 'absent(kube_cronjob_status_last_successful_time{namespace="etcd-backup", cronjob="etcd-backup"})'
    assert _firing(old, hub_ok) == []


def test_every_backup_is_missing_per_cluster():
    for doc in load_tree(DIST):
        if doc.kind != "PrometheusRule":
            continue
        for group in doc.body["spec"]["groups"]:
            for rule in group["rules"]:
                if rule.get("alert", "").endswith("Missing") and (
                    "kube_cronjob" in rule["expr"] or "velero" in rule["expr"]
                ):
                    assert not rule["expr"].startswith("absent("), rule["alert"]
                    assert "unless on (cluster)" in rule["expr"], rule["alert"]


def test_velero_after_a_restart_is_neither_failed_nor_missing_until_a_backup_ends():
    """Velero's metrics live in its memory: from its start every schedule's attempt and failure counters
    and its last status are 0 (InitSchedule), and its last success's time exists only once one succeeded.
    A last status of 0 alone is a restart, not a failure; a recorded failure must go with it."""
    failed = _rule("two-cluster", "VeleroBackupPlatformFailed")["expr"]
    assert failed.startswith('max by (cluster) (velero_backup_last_status{schedule="platform"}) != 1 and on')
    for counter in ("failure", "partial_failure", "validation_failure"):
        assert f'increase(velero_backup_{counter}_total{{schedule="platform"}}[' in failed
    missing = _rule("two-cluster", "VeleroBackupPlatformMissing")["expr"]
    schedule = {"schedule": "platform"}
    started = [
        {"__name__": "velero_backup_attempt_total", **schedule},
        {"__name__": "velero_backup_attempt_total", **schedule, "cluster": "aistor"},
        {"__name__": "velero_backup_last_successful_timestamp", **schedule},
    ]
    assert _firing(missing, started) == ["aistor"]


def test_a_database_with_no_instance_up_is_alerted():
    """`count(... == 1) < 3` has no sample at all once every instance is down: the instance alert is
    silent exactly when the database is gone; the Down alert covers it."""
    down = _rule("two-cluster", "HarborDbDown")
    assert down["labels"]["severity"] == "critical"
    up = re.fullmatch(r"absent\((\w+\{[^}]*\}) == 1\)", down["expr"]).group(1)
    pods = [
        {"__name__": "cnpg_collector_up", "namespace": "harbor", "pod": f"harbor-db-{i}"} for i in (1, 2, 3)
    ]
    assert _select(up, pods) == pods  # the selector names the instances
    instance = _rule("two-cluster", "HarborDbInstanceDown")["expr"]
    assert instance.startswith("count by (cluster) (cnpg_collector_up{") and instance.endswith("== 1) < 3")
