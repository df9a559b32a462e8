"""A node that shows none of its GPUs or NDR ports is alerted like one that shows some of them. `count by
(node)` over no series is no sample, not 0: a GPU node whose driver failed outright, or whose IB driver
never loaded, fell out of `GpuMissing` and `NdrPortMissing` exactly when it was worst. Each node of the
pool counts as 0 from node-exporter's `node_uname_info`; evaluated here on series by the form the rules
use, not by a PromQL engine."""

from __future__ import annotations

import re

from .test_backup_alerts import _rule, _rules, _select


def _firing(expr: str, series: list[dict[str, str]]) -> dict[str, int]:
    shown, nodes, expected = re.fullmatch(
        r"\(count by \(node\) \((.+?)\) or on \(node\) \(0 \* count by \(node\) \((.+?)\)\)\) < (\d+)", expr
    ).groups()
    counts = {n["node"]: 0 for n in _select(nodes, series)}
    for s in _select(shown, series):
        counts[s["node"]] = counts.get(s["node"], 0) + 1
    return {node: count for node, count in sorted(counts.items()) if count < int(expected)}


def _node(name: str, pool: str) -> dict[str, str]:
    return {"__name__": "node_uname_info", "node": name, "pool": pool}


def test_a_gpu_node_that_shows_no_gpu_is_missing_all_of_them():
    expr = _rule("two-cluster", "GpuMissing")["expr"]
    gpus = [{"__name__": "DCGM_FI_DEV_GPU_TEMP", "node": "gpu01", "gpu": str(i)} for i in range(8)]
    gpus += [{"__name__": "DCGM_FI_DEV_GPU_TEMP", "node": "gpu03", "gpu": str(i)} for i in range(7)]
    nodes = [_node("gpu01", "gpu"), _node("gpu02", "gpu"), _node("gpu03", "gpu"), _node("cmp01", "compute")]
    assert _firing(expr, gpus + nodes) == {"gpu02": 0, "gpu03": 7}


def test_a_node_that_shows_no_ndr_port_is_missing_all_of_them():
    (rule,) = [r for r in _rules("two-cluster", "NdrPortMissing") if 'pool="gpu"' in r["expr"]]
    ports = [
        {"__name__": "node_infiniband_state_id", "node": "gpu01", "pool": "gpu", "device": f"mlx5_{i}"}
        for i in range(4)
    ]
    nodes = [_node("gpu01", "gpu"), _node("gpu02", "gpu"), _node("st01", "storage")]
    assert _firing(rule["expr"], ports + nodes) == {"gpu02": 0}
