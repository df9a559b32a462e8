"""The labels the site reads off DCGM's series are ones the scrape gives them. dcgm-exporter
4.6.0-4.8.3 (the GPU Operator v26.7.0's) renamed its host label `Hostname` to `hostname`
(NVIDIA/dcgm-exporter#655): alerts, the GPU node guard and the dashboard that matched `Hostname` matched
nothing, so a GPU node with a fatal Xid was never cordoned and a missing GPU never alerted. The node is
now the scrape target's (`node`, from the exporter pod's node, as node-exporter's series have it)."""

from __future__ import annotations

import json
import re

from constructs.node_faults import NODE_LABEL
from sitegen.components.gpu.gpu_operator import DCGM_METRICS, METRICS_CONFIG, GpuOperator
from sitegen.tree.documents import load_tree

from .conftest import DIST

# What a DCGM series carries once scraped: the exporter's own labels (4.6.0-4.8.3: render_metrics.go,
# and the pod mapping's namespace/pod/container, renamed exported_* as they clash with the target's
# under honorLabels: false), the ServiceMonitor target's labels with the relabelled node, and the
# `cluster` a spoke's remote write adds.
EXPORTER = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "GPU_I_PROFILE", "GPU_I_ID"}
EXPORTED = {"exported_namespace", "exported_pod", "exported_container", "DCGM_FI_DRIVER_VERSION"}
TARGET = {NODE_LABEL, "job", "instance", "namespace", "pod", "container", "endpoint", "service", "cluster"}
SCRAPED = EXPORTER | EXPORTED | TARGET


def _labels_read(text: str) -> set[str]:
    """Labels an expression, summary or legend of DCGM's names: `by (...)`, matchers, `$labels.x`,
    `{{x}}` and label_values' second argument."""
    found = set()
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", text):
        found |= {g.strip() for g in group.split(",") if g.strip()}
    found |= set(re.findall(r"DCGM_\w+\{([A-Za-z_]\w*)\s*[=!]~?", text))
    found |= set(re.findall(r"\$labels\.(\w+)", text))
    found |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", text))
    found |= set(re.findall(r"label_values\(DCGM_\w+,\s*(\w+)\)", text))
    return found


def _dcgm_texts() -> list[tuple[str, str]]:
    """Every rule, guard condition and dashboard panel of dist/ that reads a DCGM series."""
    texts = []
    for doc in load_tree(DIST):
        if doc.kind == "PrometheusRule":
            for group in doc.body["spec"]["groups"]:
                for rule in group["rules"]:
                    text = json.dumps(rule)
                    if "DCGM_" in rule.get("expr", ""):
                        texts.append((f"{doc.file}: {rule.get('alert') or rule.get('record')}", text))
        elif doc.kind == "ConfigMap":
            for key, value in (doc.body.get("data") or {}).items():
                if "DCGM_" not in value or key.endswith(".csv"):  # the exporter's list itself
                    continue
                if key.endswith(".json"):
                    board = json.loads(value)
                    panels = [*board.get("panels", []), *board.get("templating", {}).get("list", [])]
                    texts += [
                        (f"{doc.file}: {p.get('title') or p.get('name')}", json.dumps(p)) for p in panels
                    ]
                else:
                    texts.append((f"{doc.file}: {key}", value))
    return texts


def test_every_label_read_off_a_dcgm_series_is_one_the_scrape_gives():
    texts = _dcgm_texts()
    assert len(texts) > 10  # the GPU alerts, the guard's conditions, the GPU dashboard
    wrong = {
        where: sorted(_labels_read(text) - SCRAPED) for where, text in texts if _labels_read(text) - SCRAPED
    }
    assert not wrong


def test_the_alerts_and_the_guard_name_the_node_as_the_scrape_labels_it():
    texts = dict(_dcgm_texts())
    missing = next(t for w, t in texts.items() if w.endswith("GpuMissing"))
    assert f"count by ({NODE_LABEL})" in missing and f"{NODE_LABEL}=~" in missing
    guard = [t for w, t in texts.items() if "gpu-node-guard-conditions" in w]
    assert guard and all(t.startswith(f"count by (cluster, {NODE_LABEL}) (DCGM_") for t in guard)


def test_the_exporters_service_monitor_labels_each_series_with_its_pods_node():
    policies = [d for d in load_tree(DIST) if d.kind == "ClusterPolicy"]
    assert policies
    for policy in policies:
        monitor = policy.body["spec"]["dcgmExporter"]["serviceMonitor"]
        assert {
            "action": "replace",
            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
            "targetLabel": NODE_LABEL,
        } in monitor["relabelings"], policy.file
        assert monitor["honorLabels"] is False  # the pod mapping's namespace and pod become exported_*


def _collected(doc) -> set[str]:
    return {line.split(",")[0] for line in doc.body["data"]["dcgm-metrics.csv"].splitlines() if line}


def test_every_dcgm_field_the_site_reads_is_one_the_exporter_collects():
    """The exporter collects its list in place of its defaults, whose ECC, throttling and NVLink-error
    fields are commented out: a rule or panel on a field it does not collect never fires or shows."""
    lists = [d for d in load_tree(DIST) if d.kind == "ConfigMap" and d.name == METRICS_CONFIG]
    assert lists
    for csv in lists:
        policy = next(d for d in load_tree(DIST) if d.kind == "ClusterPolicy" and d.cluster == csv.cluster)
        assert policy.body["spec"]["dcgmExporter"]["config"] == {"name": METRICS_CONFIG}
        assert csv.namespace == GpuOperator.namespace  # where the operator mounts it from
        collected = _collected(csv)
        read = {
            (where, field)
            for where, text in _dcgm_texts()
            if where.startswith(f"{csv.variant}/")
            for field in re.findall(r"DCGM_FI_\w+", text)
        }
        assert read and {f for _, f in read} <= collected, sorted(r for r in read if r[1] not in collected)
    assert "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS" in {f for f, _, _ in DCGM_METRICS}


def test_a_host_label_of_the_exporter_is_caught():
    assert _labels_read('count by (Hostname) (DCGM_FI_DEV_GPU_TEMP{Hostname=~"gpu01"})') - SCRAPED == {
        "Hostname"
    }
    assert _labels_read("{{ $labels.Hostname }} GPU {{gpu}}") - SCRAPED == {"Hostname"}
