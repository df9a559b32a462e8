"""MON-001 on what the clusters receive: each monitor is read by a Prometheus of its cluster and finds a
Service or pod with the port it names. The otel-gateway's ServiceMonitor scraped a port named `metrics`
that the chart leaves out of the Service unless `ports.metrics` is on, so the collector's own metrics
were never scraped; each test puts back a defect of that kind and expects the finding on the monitor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from .conftest import DIST, findings, validate
from .conftest import edit_documents as _edit

APPS = "one-cluster/apps/ai"
GATEWAY_SERVICE = f"{APPS}/otel-gateway/monitoring.service.otel-gateway.yaml"
GATEWAY_MONITOR = f"{APPS}/otel-gateway/monitoring.servicemonitor.otel-gateway.yaml"
PROMETHEUS = f"{APPS}/kube-prometheus-stack/monitoring.prometheus.kube-prometheus-stack-prometheus.yaml"
SITE_RULES = "apps/ai/observability/monitoring.prometheusrule.site.yaml"
OPERATOR = f"{APPS}/kube-prometheus-stack/monitoring.deployment.kube-prometheus-stack-operator.yaml"

pytestmark = pytest.mark.tree_variants("one-cluster")


def _findings(tree: Path) -> list[str]:
    return [line for line in findings(tree) if "MON-001" in line]


def test_the_shipped_monitors_all_find_their_targets(tree):
    result = validate(tree)
    assert "MON-001" not in result.stdout, result.stdout


def test_a_service_without_the_port_its_monitor_scrapes_is_refused(tree):
    def drop_metrics(doc):
        doc["spec"]["ports"] = [p for p in doc["spec"]["ports"] if p["name"] != "metrics"]

    _edit(tree, GATEWAY_SERVICE, drop_metrics)
    (line,) = _findings(tree)
    assert line.startswith(GATEWAY_MONITOR) and "port named metrics" in line, line


def test_a_monitor_no_prometheus_selects_is_refused(tree):
    """An unset namespace selector reads the Prometheus's own namespace alone: the node collectors'
    PodMonitor in monitoring-agents (and every other namespace's monitors) would go unread."""
    _edit(tree, PROMETHEUS, lambda doc: doc["spec"].pop("podMonitorNamespaceSelector"))
    lines = _findings(tree)
    assert any("PodMonitor monitoring-agents/otel-node-agent" in ln for ln in lines), lines
    assert all("no Prometheus of the cluster selects it" in ln and "monitoring/" not in ln for ln in lines)

    _edit(tree, PROMETHEUS, lambda doc: doc["spec"].pop("serviceMonitorSelector"))  # unset: none at all
    assert any(GATEWAY_MONITOR in ln and "no Prometheus" in ln for ln in _findings(tree))


def test_targets_made_at_run_time_count_only_where_their_maker_is_shipped(tree):
    """The kubelets' Service is prometheus-operator's, named by its `--kubelet-service`; the database
    instances are CloudNativePG's, one set per Cluster."""

    def no_kubelet_service(doc):
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container["args"] = [a for a in container["args"] if not a.startswith("--kubelet-service=")]

    _edit(tree, OPERATOR, no_kubelet_service)
    (tree / APPS / "harbor-database" / "harbor.cluster.harbor-db.yaml").unlink()
    lines = _findings(tree)
    assert any(
        "ServiceMonitor monitoring/kube-prometheus-stack-kubelet" in ln
        and "selects no Service in kube-system" in ln
        for ln in lines
    ), lines
    assert any(
        "PodMonitor monitoring/harbor-db" in ln and "selects no pod in harbor" in ln for ln in lines
    ), lines
    assert len(lines) == 2, lines


def test_the_log_alerts_read_the_counters_the_collectors_expose():
    """The collectors' exporter counters, as their Prometheus reader names them (`_total` from the SDK's
    exporter): a rule on another name stays silent while logs are lost."""
    exposed = {"LogsNotShipped": "otelcol_exporter_send_failed_log_records_total",
               "LogsDropped": "otelcol_exporter_enqueue_failed_log_records_total"}  # fmt: skip
    for variant in ("one-cluster", "two-cluster"):
        rule = yaml.safe_load((DIST / variant / SITE_RULES).read_text().split("---", 1)[1])
        (group,) = [g for g in rule["spec"]["groups"] if g["name"] == "site-telemetry"]
        for alert in [r for r in group["rules"] if r["alert"] in exposed]:
            (pattern,) = re.findall(r'__name__=~"([^"]+)"', alert["expr"])
            assert re.fullmatch(pattern, exposed[alert["alert"]]), alert
            assert "sum by (cluster, namespace, pod, exporter)" in alert["expr"], alert


def test_a_spoke_whose_series_stop_arriving_is_alerted_by_the_label_its_agent_writes():
    """The hub hears of a spoke only through the series its agent writes, each with the agent's external
    label `cluster`: the alert asks for exactly that label, one per spoke, none in one-cluster."""
    agent = (
        "apps/aistor/kube-prometheus-stack/monitoring.prometheusagent.kube-prometheus-stack-prometheus.yaml"
    )
    labels = yaml.safe_load((DIST / "two-cluster" / agent).read_text().split("---", 1)[1])["spec"][
        "externalLabels"
    ]
    alerts = {}
    for variant in ("one-cluster", "two-cluster"):
        rule = yaml.safe_load((DIST / variant / SITE_RULES).read_text().split("---", 1)[1])
        alerts[variant] = [
            r for g in rule["spec"]["groups"] for r in g["rules"] if r["alert"] == "ClusterMetricsAbsent"
        ]
    assert alerts["one-cluster"] == []
    (alert,) = alerts["two-cluster"]
    assert alert["expr"] == f'absent(up{{cluster="{labels["cluster"]}"}})' and labels["cluster"] == "aistor"


def test_the_runbook_routes_the_watchdog_the_hub_fires_to_a_dead_mans_switch():
    """Alerting that is down says nothing: the RUNBOOK's Alertmanager configuration sends the chart's
    always-firing Watchdog outside the site, whose silence is the alert. The Watchdog must exist."""
    for variant in ("one-cluster", "two-cluster"):
        runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        (line,) = [ln for ln in runbook.splitlines() if ln.startswith("- `alertmanager/config`")]
        assert "`Watchdog`" in line and "dead man's switch" in line and "amtool check-config" in line
        general = DIST / variant / "apps/ai/kube-prometheus-stack"
        rules = yaml.safe_load((general / "monitoring.prometheusrule.kube-prometheus-stack-general.rules.yaml")
                               .read_text().split("---", 1)[1])  # fmt: skip
        (watchdog,) = [r for g in rules["spec"]["groups"] for r in g["rules"] if r.get("alert") == "Watchdog"]
        assert watchdog["expr"] == "vector(1)"
