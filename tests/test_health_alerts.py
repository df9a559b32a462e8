"""A periodic GPU health check that has never passed is stale like one that stopped passing: the rule
counted from the last success, which kube-state-metrics writes only once there is one, so a check Kueue
never admitted (the case the alert is for) stayed silent. Per cluster: one cluster's passes no longer
hide another's. Evaluated on series by the form the rule uses, not by a PromQL engine."""

from __future__ import annotations

import re

from .test_backup_alerts import _rule, _select

NOW = 100 * 86400


def _stale(expr: str, series: list[dict]) -> list[tuple[str, str]]:
    last, made, age, suspend = re.fullmatch(
        r"\(time\(\) - \(max by \(cluster, cronjob\) \((.+?)\) or max by \(cluster, cronjob\) \((.+?)\)\)\) "
        r"> (\d+) and on \(cluster, cronjob\) max by \(cluster, cronjob\) \((.+?)\) == 0",
        expr,
    ).groups()

    def by_key(selector: str) -> dict[tuple[str, str], float]:
        return {(s.get("cluster", ""), s["cronjob"]): s["value"] for s in _select(selector, series)}

    since = {**by_key(made), **by_key(last)}  # `or`: the last success where there is one
    running = {k for k, v in by_key(suspend).items() if v == 0}
    return sorted(k for k, t in since.items() if NOW - t > int(age) and k in running)


def _cronjob(name: str, metric: str, value: float, cluster: str = "") -> dict:
    return {"__name__": metric, "namespace": "gpu-health", "cronjob": name, "value": value,
            **({"cluster": cluster} if cluster else {})}  # fmt: skip


def test_a_health_check_that_never_passed_goes_stale_per_cluster():
    rule = _rule("two-cluster", "GpuHealthCheckStale")
    old = NOW - 30 * 86400
    series = [
        # made a month ago, never passed (Kueue never admitted it)
        _cronjob("nccl-health", "kube_cronjob_created", old),
        _cronjob("nccl-health", "kube_cronjob_spec_suspend", 0),
        # the same check on another cluster passed yesterday
        _cronjob("nccl-health", "kube_cronjob_created", old, "gpu"),
        _cronjob("nccl-health", "kube_cronjob_spec_suspend", 0, "gpu"),
        _cronjob("nccl-health", "kube_cronjob_status_last_successful_time", NOW - 86400, "gpu"),
        # a burn-in: suspended, run by hand
        _cronjob("burn-in-gpu01", "kube_cronjob_created", old),
        _cronjob("burn-in-gpu01", "kube_cronjob_spec_suspend", 1),
        # made an hour ago: not stale yet
        _cronjob("dcgm-health", "kube_cronjob_created", NOW - 3600),
        _cronjob("dcgm-health", "kube_cronjob_spec_suspend", 0),
    ]
    assert _stale(rule["expr"], series) == [("", "nccl-health")]
