"""AIStor's metrics are scraped on the path whose names the site's alerts and dashboard read: metrics v2's
cluster endpoint, pinned on the ObjectStore rather than left to the operator's default (v3, which MinIO
recommends for new deployments, names every metric differently: an alert on a name nobody scrapes never
fires)."""

from __future__ import annotations

import json
import re

from constructs.aistor import METRICS_PATH
from sitegen.tree.documents import load_tree

from .conftest import DIST

# The v2 names the site reads, as MinIO's cmd/metrics-v2.go composes them (namespace_subsystem_name);
# a name added to a rule or a panel is checked there and added here.
V2_CLUSTER_NAMES = {
    "minio_cluster_capacity_raw_total_bytes",
    "minio_cluster_capacity_usable_free_bytes",
    "minio_cluster_capacity_usable_total_bytes",
    "minio_cluster_drive_offline_total",
    "minio_cluster_drive_online_total",
    "minio_cluster_health_status",
    "minio_cluster_nodes_offline_total",
    "minio_cluster_nodes_online_total",
    "minio_heal_objects_heal_total",
    "minio_s3_requests_errors_total",
    "minio_s3_requests_total",
    "minio_s3_traffic_received_bytes",
    "minio_s3_traffic_sent_bytes",
}


def test_the_object_store_is_scraped_on_the_v2_cluster_path():
    stores = [d for d in load_tree(DIST) if d.kind == "ObjectStore" and d.group == "aistor.min.io"]
    assert stores
    for store in stores:
        assert store.body["spec"]["prometheusOperator"] is True
        assert store.body["spec"]["prometheusOperatorScrapeMetricsPaths"] == [METRICS_PATH]
    assert METRICS_PATH == "/minio/v2/metrics/cluster"


def test_every_aistor_metric_the_site_reads_is_a_v2_name():
    read = set()
    for doc in load_tree(DIST):
        if doc.kind == "PrometheusRule" or (doc.kind == "ConfigMap" and "dashboard" in doc.name):
            read |= set(re.findall(r"\bminio_[a-z0-9_]+", json.dumps(doc.body)))
    assert {"minio_cluster_drive_offline_total", "minio_s3_requests_total"} <= read
    assert read <= V2_CLUSTER_NAMES, sorted(read - V2_CLUSTER_NAMES)


def test_no_aistor_metrics_at_all_is_alerted():
    """Every AIStor alert reads AIStor's own series: with none (a scrape refused, a spoke's remote write
    down) they are blind, not quiet."""
    rules = [
        r
        for d in load_tree(DIST)
        if d.kind == "PrometheusRule"
        for g in d.body["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == "AIStorMetricsAbsent"
    ]
    assert rules and all(r["expr"] == "absent(minio_cluster_nodes_online_total)" for r in rules)
    assert "minio_cluster_nodes_online_total" in V2_CLUSTER_NAMES
