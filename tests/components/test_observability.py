"""Observability components: the hub's stack, the agents elsewhere, and the site's alert rules."""

from __future__ import annotations

import dataclasses

import pytest

from sitegen.check.placement import tolerated_taints
from sitegen.components.observability.grafana import Grafana
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.observability.loki import Loki
from sitegen.components.observability.observability import Observability
from sitegen.components.observability.otel_gateway import OtelGateway
from sitegen.components.observability.otel_node import OtelNode
from sitegen.components.observability.prometheus_smartctl_exporter import PrometheusSmartctlExporter

from .conftest import by_kind, context, render


def test_prometheus_is_ha_on_the_hub_and_an_agent_elsewhere(two, small):
    hub = render(two, "ai", KubePrometheusStack)
    assert hub["prometheus"]["prometheusSpec"]["replicas"] == small.services.monitoring.prometheus.replicas
    assert hub["prometheus"]["prometheusSpec"]["enableRemoteWriteReceiver"] is True
    spoke = render(two, "aistor", KubePrometheusStack)
    assert spoke["prometheus"]["agentMode"] is True
    (write,) = spoke["prometheus"]["prometheusSpec"]["remoteWrite"]
    assert write["url"] == f"https://{small.services.monitoring.telemetry_hostname}/api/v1/write"


def test_node_agents_tolerate_every_taint(two):
    for cluster in ("ai", "aistor"):
        pools = context(two, cluster).cluster.pools
        every = {t for p in pools for t in p.taints}
        kps = render(two, cluster, KubePrometheusStack)
        assert tolerated_taints(kps["prometheus-node-exporter"], pools) == every
        for kind in (PrometheusSmartctlExporter, OtelNode):
            assert tolerated_taints(render(two, cluster, kind), pools) == every


def test_log_collectors_deliver_in_cluster_on_the_hub_and_through_the_gateway_elsewhere(two, small):
    hub = render(two, "ai", OtelNode)["config"]["exporters"]["otlphttp"]
    assert hub["endpoint"].startswith("http://otel-gateway.monitoring.svc.")
    spoke = render(two, "aistor", OtelNode)["config"]["exporters"]["otlphttp"]
    assert spoke["endpoint"] == f"https://{small.services.monitoring.telemetry_hostname}"


def test_stack_services_only_on_the_hub(two):
    for kind in (Loki, Grafana, OtelGateway):
        assert context(two, "ai").has(kind) and not context(two, "aistor").has(kind)


def test_loki_writes_to_the_configured_buckets(one, small):
    values = render(one, "ai", Loki)
    logs = small.services.logs
    assert values["loki"]["storage"]["bucketNames"] == {"chunks": logs.bucket, "ruler": logs.ruler_bucket}
    assert [a.buckets for a in context(one, "ai").get(Loki).s3_access(context(one, "ai"))] == [
        (logs.bucket, logs.ruler_bucket)
    ]


def test_gpu_alert_counts_the_gpus_of_the_pool(one, small):
    (rules,) = by_kind(render(one, "ai", Observability), "PrometheusRule")
    alerts = {r["alert"]: r for g in rules["spec"]["groups"] for r in g["rules"]}
    assert alerts["GpuMissing"]["expr"].endswith(f"< {small.hardware_of('gpu').gpu.count}")
    assert "gpu01|gpu02" in alerts["GpuMissing"]["expr"]


def test_grafana_reads_prometheus_and_loki_of_its_cluster(one):
    values = render(one, "ai", Grafana)
    urls = {d["uid"]: d["url"] for d in values["datasources"]["datasources.yaml"]["datasources"]}
    assert urls["prometheus"].startswith("http://kube-prometheus-stack-prometheus.monitoring.svc.")
    assert urls["loki"].startswith("http://loki-gateway.loki.svc.")


def _external_secrets(apps, cluster):
    return {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d
        for d in by_kind(render(apps, cluster, Observability), "ExternalSecret")
    }


def test_the_observability_app_writes_exactly_what_its_charts_declare(two):
    """Each chart's component declares the Secrets it reads (`vault_secrets`); the project's app
    renders those and nothing else, on the hub and on the agents' cluster alike."""
    for cluster, charts in (
        ("ai", (KubePrometheusStack, Grafana, Loki, OtelGateway)),
        ("aistor", (KubePrometheusStack, OtelNode)),
    ):
        ctx = context(two, cluster)
        declared = {(s.namespace, s.name): s for kind in charts for s in ctx.get(kind).vault_secrets(ctx)}
        rendered = _external_secrets(two, cluster)
        assert set(rendered) == set(declared) and declared
        for key, spec in declared.items():
            remote = [r["remoteRef"] for r in rendered[key]["spec"]["data"]]
            assert remote == [{"key": spec.key, "property": p} for p in spec.properties]


def test_a_secret_declared_twice_differently_is_refused(two, monkeypatch):
    ctx = context(two, "ai")
    twin = ctx.get(Grafana).vault_secrets(ctx)[0]
    monkeypatch.setattr(
        Loki, "vault_secrets", lambda self, ctx: [dataclasses.replace(twin, key="loki/other")], raising=True
    )
    with pytest.raises(ValueError, match=f"Secret {twin.namespace}/{twin.name} is declared twice"):
        render(two, "ai", Observability)
