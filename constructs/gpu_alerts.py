"""The site's alerts on its GPU nodes: DCGM's series (Xid, remapped rows, NVLink, heat, GPUs missing)
and each node's count of GPUs."""

from __future__ import annotations

from typing import Any

from constructs.alert_rule import alert as _alert
from constructs.alert_rule import per_node
from constructs.alert_rule import regex as _regex
from constructs.node_faults import FATAL_XID, ROW_REMAP_FAILURE
from constructs.site_watches import SiteRisks


def gpu_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    rules = [
        # DCGM exports the last Xid code as the value (0: none since the exporter started), and keeps it:
        # a new Xid is a change of the value (one repeating the last code is not seen). GpuFatalXid stays
        # on while the last code is fatal: the node needs its repair.
        _alert(
            "GpuXid",
            "DCGM_FI_DEV_XID_ERRORS != 0 and changes(DCGM_FI_DEV_XID_ERRORS[15m]) > 0",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported Xid {{ $value }}",
            for_="0m",
        ),
        _alert(
            "GpuFatalXid",
            FATAL_XID,
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }}: Xid {{ $value }}; drain the node and reset the GPU",
            for_="0m",
        ),
        _alert(
            "GpuUncorrectableRemappedRows",
            "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} remapped rows after uncorrectable errors",
            for_="0m",
        ),
        _alert(
            "GpuRowRemapFailure",
            ROW_REMAP_FAILURE,
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} ran out of spare rows: replace it",
            for_="0m",
        ),
        _alert(
            "DcgmExporterDown",
            'up{job="nvidia-dcgm-exporter"} == 0',
            "warning",
            "no GPU metrics from {{ $labels.instance }}: Xid and ECC alerts are blind there",
        ),
    ]
    rules += _link_and_heat_rules()
    for pool, (count, hosts) in sorted(risks.gpus_per_node.items()):
        rules.append(
            _alert(
                "GpuMissing",
                per_node(
                    f'DCGM_FI_DEV_GPU_TEMP{{node=~"{_regex(hosts)}"}}', f'{{node=~"{_regex(hosts)}"}}', count
                ),
                "critical",
                f"{{{{ $labels.node }}}} (pool {pool}) shows {{{{ $value }}}} of its {count} GPUs",
                for_="10m",
            )
        )
    return rules


def _link_and_heat_rules() -> list[dict[str, Any]]:
    """NVLink recoveries (NVLink5 counts them per GPU across its links) and throttling for heat: both slow
    every collective the GPU takes part in, with no Xid. Each is a counter of the exporter's list (the
    GPU Operator's `dcgmExporter.config`); the throttling counter's unit varies by source, so the rule
    asks only that it grew in every window for a quarter of an hour."""
    return [
        _alert(
            "GpuNvlinkDown",
            "increase(DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS[15m]) > 0",
            "critical",
            "an NVLink of GPU {{ $labels.gpu }} on {{ $labels.node }} failed to recover and is down: "
            "drain the node; its GPUs' collectives fall back or fail",
            for_="0m",
        ),
        _alert(
            "GpuNvlinkRecovering",
            "increase(DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS[1h]) > 0",
            "warning",
            "NVLinks of GPU {{ $labels.gpu }} on {{ $labels.node }} went through {{ $value }} recoveries "
            "in an hour: a link retrains under load",
            for_="0m",
        ),
        _alert(
            "GpuThermalThrottling",
            "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) > 0",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} has been slowed for heat for 15 minutes: "
            "check its cooling",
            for_="15m",
        ),
    ]
