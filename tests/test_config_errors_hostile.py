"""What a hostile or careless config still got through (issue 16): each case is one `error:` line
naming file and field, exit 2, refused before anything is rendered, the output folder untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from .config_mutations import (
    add_text,
    append,
    both,
    case,
    check_case,
    on_hosts,
    remove_item,
    set_value,
    write_text,
)

# "Billion laughs": nine levels of nine aliases, 387,420,489 strings once expanded.
LAUGHS = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" if i else 'l0: &l0 ["lol"]\n' for i in range(9)
)
EXTRA_CONTROL_PLANE = [{"name": f"cp{i:02d}", "address": f"10.20.0.{10 + i}"} for i in range(6, 10)]

CASES = [
    # --- reading ---------------------------------------------------------------------------------
    case(
        "alias-bomb-in-a-typed-field",
        write_text("tenants.yaml", LAUGHS + "research:\n  description: *l8\n"),
        "tenants.yaml",
        "",
        "YAML aliases (*l0) are not allowed in config",
    ),
    case(
        "alias-bomb-under-an-unknown-key",
        write_text("gitops.yaml", LAUGHS),
        "gitops.yaml",
        "",
        "YAML aliases",
    ),
    case(
        "ten-megabyte-file",
        add_text("tenants.yaml", "# " + "x" * 10_000_000 + "\n"),
        "tenants.yaml",
        "",
        "a config file may hold at most 1,048,576",
    ),
    case(
        "long-value-is-cut",
        set_value("clusters.yaml", "ai", "dns_domain", value="a" * 200_000),
        "clusters.yaml",
        "ai.dns_domain",
        "characters]",
    ),
    # --- strict types ------------------------------------------------------------------------------
    case(
        "bool-as-int",
        set_value("services.yaml", "monitoring", "alertmanager_replicas", value=True),
        "services.yaml",
        "monitoring.alertmanager_replicas",
        "Input should be a valid integer",
    ),
    case(
        "string-as-int",
        set_value("services.yaml", "monitoring", "alertmanager_replicas", value="3"),
        "services.yaml",
        "monitoring.alertmanager_replicas",
        "Input should be a valid integer",
    ),
    case(
        "float-as-int",
        set_value("services.yaml", "monitoring", "alertmanager_replicas", value=3.0),
        "services.yaml",
        "monitoring.alertmanager_replicas",
        "Input should be a valid integer",
    ),
    case(
        "number-as-string",
        set_value("tenants.yaml", "ai-research", "description", value=42),
        "tenants.yaml",
        "ai-research.description",
        "Input should be a valid string",
    ),
    case(
        "int-as-bool",
        set_value("tenants.yaml", "ai-research", "nccl_benchmark", value=1),
        "tenants.yaml",
        "ai-research.nccl_benchmark",
        "Input should be a valid boolean",
    ),
    # --- impossible sites ----------------------------------------------------------------------------
    case(
        "pod-cidr-too-small-for-the-nodes",
        set_value("clusters.yaml", "ai", "pod_cidr", value="10.64.0.0/20"),
        "clusters.yaml",
        "ai.pod_cidr",
        "10.64.0.0/20 holds 16 node blocks of /24; variant one-cluster puts 102 nodes in cluster ai",
    ),
    case(
        "pod-cidr-smaller-than-a-node-block",
        set_value("clusters.yaml", "ai", "pod_cidr", value="10.64.0.0/25"),
        "clusters.yaml",
        "ai.pod_cidr",
        "smaller than one node's block (/24)",
    ),
    case(
        "service-cidr-larger-than-the-api-server-takes",
        set_value("clusters.yaml", "ai", "service_cidr", value="10.96.0.0/11"),
        "clusters.yaml",
        "ai.service_cidr",
        "larger than the API server allows (/12 at most)",
    ),
    case(
        "control-plane-of-four",
        both(
            set_value("pools.yaml", "control-plane", "count", value=4),
            on_hosts(
                remove_item(
                    "pools.yaml", "control-plane", "hosts", item={"name": "cp05", "address": "10.20.0.15"}
                )
            ),
        ),
        "pools.yaml",
        "control-plane.count",
        "4 control-plane nodes: stacked etcd needs an odd member count",
    ),
    case(
        "control-plane-of-nine",
        both(
            set_value("pools.yaml", "control-plane", "count", value=9),
            *(append("pools.yaml", "control-plane", "hosts", value=host) for host in EXTRA_CONTROL_PLANE),
        ),
        "pools.yaml",
        "control-plane.count",
        "etcd above 7 members only slows writes",
    ),
    case(
        "parity-above-half-the-set",
        set_value("storage.yaml", "aistor", "parity", value=8),
        "storage.yaml",
        "aistor.parity",
        "EC:8 on sets of 15 drives: AIStor allows at most EC:7",
    ),
    case(
        "parity-as-large-as-the-set",
        both(
            set_value("storage.yaml", "aistor", "set_drive_count", value=4),
            set_value("storage.yaml", "aistor", "parity", value=4),
        ),
        "storage.yaml",
        "aistor.parity",
        "EC:4 on sets of 4 drives: AIStor allows at most EC:2",
    ),
    case(
        "set-size-not-dividing-the-drives",
        set_value("storage.yaml", "aistor", "set_drive_count", value=7),
        "storage.yaml",
        "aistor.set_drive_count",
        "720 drives do not divide into sets of 7",
    ),
    # --- names and pins ------------------------------------------------------------------------------
    case(
        "tenant-named-kube-system",
        set_value(
            "tenants.yaml",
            "kube-system",
            value={
                "description": "x",
                "quota": {"storage_gb": 100, "volumes": 1},
                "object_storage": {"data": {"quota_tb": 1}},
            },
        ),
        "tenants.yaml",
        "kube-system",
        "a Kubernetes system namespace",
    ),
    case(
        "tenant-named-after-a-platform-namespace",
        set_value(
            "tenants.yaml",
            "monitoring",
            value={
                "description": "x",
                "quota": {"storage_gb": 100, "volumes": 1},
                "object_storage": {"data": {"quota_tb": 1}},
            },
        ),
        "tenants.yaml",
        "monitoring",
        "namespace 'monitoring' belongs to component",
    ),
    case(
        "tenant-named-argocd",
        set_value(
            "tenants.yaml",
            "argocd",
            value={
                "description": "x",
                "quota": {"storage_gb": 100, "volumes": 1},
                "object_storage": {"data": {"quota_tb": 1}},
            },
        ),
        "tenants.yaml",
        "argocd",
        "belongs to component argo-cd",
    ),
    case(
        "missing-chart-pin",
        lambda cfg: _drop(cfg, "charts", "kueue"),
        "versions.yaml",
        "charts.kueue",
        "missing pin (needed by component kueue)",
    ),
    case(
        "missing-image-pin",
        lambda cfg: _drop(cfg, "images", "curl"),
        "versions.yaml",
        "images.curl",
        "missing pin (needed by component",
    ),
    case(
        "a-kernel-setting-the-kubelet-refuses",
        set_value("hosts.yaml", "sysctls", "kernel.panic", value="0"),
        "hosts.yaml",
        "sysctls.kernel.panic",
        "the kubelet (protectKernelDefaults) does not start unless it is '10'",
    ),
]


def _drop(cfg: Path, section: str, key: str) -> None:
    from .conftest import edit_yaml

    def change(data: dict) -> None:
        del data[section][key]

    edit_yaml(cfg, "versions.yaml", change)


def _never_rendered(*args: object, **kwargs: object) -> None:
    raise AssertionError("charts and constructs were rendered: this fault must stop synth before that")


@pytest.mark.parametrize(("mutate", "file", "field", "message"), CASES)
def test_hostile_config(
    mutate, file: str, field: str, message: str, config_copy: Path, out_copy: Path, monkeypatch
) -> None:
    """Refused before any chart or construct is rendered (what keeps each case cheap, however hostile:
    an alias bomb is refused on the parser's events, before anything is built)."""
    from sitegen.compose import variant

    monkeypatch.setattr(variant, "_jobs", _never_rendered)
    check_case(mutate, file, field, message, config_copy, out_copy)


def test_too_few_service_addresses_for_the_services(config_copy: Path, out_copy: Path) -> None:
    """Counted on what the cluster receives (hydrated charts included): only known after composing,
    so this case takes a synth's time rather than a load's."""
    check_case(
        set_value("clusters.yaml", "ai", "service_cidr", value="10.96.0.0/27"),
        "clusters.yaml",
        "ai.service_cidr",
        "10.96.0.0/27 gives 30 Service addresses; variant one-cluster creates ",
        config_copy,
        out_copy,
    )


def test_an_error_line_stays_short(config_copy: Path, out_copy: Path) -> None:
    from .conftest import invoke_sitegen

    set_value("tenants.yaml", "ai-research", "nccl_benchmark", value="y" * 500_000)(config_copy)
    result = invoke_sitegen("synth", "--config", config_copy, "--out", out_copy)
    assert result.exit_code == 2 and len(result.stderr) < 600, len(result.stderr)
