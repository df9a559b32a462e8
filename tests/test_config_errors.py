"""Every broken config makes `sitegen synth` print one `error: <file>: <field>: <message>` line and exit 2.

Reading, shape and types, storage, versions, services and dashboards here; pools, fabric, clusters and
variants in test_config_errors_topology.py. Both use the mutations of config_mutations.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .config_mutations import (
    add_bytes,
    add_text,
    append,
    both,
    case,
    check_case,
    delete,
    expand_ranges,
    missing_directory,
    on_hosts,
    remove_file,
    remove_item,
    replace_text,
    set_value,
    write_text,
)
from .conftest import DIST, edit_yaml, invoke_sitegen, run_sitegen, tree_bytes

CASES = [
    # --- reading the files ---------------------------------------------------------------------
    case(
        "yaml-syntax", add_text("clusters.yaml", "broken: [1, 2\n"), "clusters.yaml", "", "YAML error: line"
    ),
    case(
        "yaml-tab-indent",
        write_text("storage.yaml", "aistor:\n\tpool: storage\n"),
        "storage.yaml",
        "",
        "YAML error",
    ),
    case(
        "yaml-control-char", add_text("storage.yaml", "\x07\n"), "storage.yaml", "", "unacceptable character"
    ),
    case("empty-file", write_text("storage.yaml", ""), "storage.yaml", "", "file is empty"),
    case(
        "comments-only-file", write_text("variants.yaml", "# nothing\n"), "variants.yaml", "", "file is empty"
    ),
    case(
        "top-level-list",
        write_text("storage.yaml", "- aistor\n"),
        "storage.yaml",
        "",
        "must be a mapping, got list",
    ),
    case("non-utf8", add_bytes("pools.yaml", b"# caf\xe9\n"), "pools.yaml", "", "not UTF-8"),
    case("missing-file", remove_file("storage.yaml"), "storage.yaml", "", "file is missing"),
    case("missing-config-dir", missing_directory, "no-such-config", "", "config directory does not exist"),
    case(
        "duplicate-pool-key",
        add_text("pools.yaml", "compute:\n  description: a second compute pool\n"),
        "pools.yaml",
        "",
        "duplicate key 'compute'",
    ),
    case(
        "duplicate-nested-key",
        replace_text("hardware.yaml", "  cpu_cores: 96\n", "  cpu_cores: 96\n  cpu_cores: 96\n"),
        "hardware.yaml",
        "",
        "duplicate key 'cpu_cores' at line 16 (first at line 15)",  # both places, to pick the right one
    ),
    case(
        "yaml-1-1-boolean",
        replace_text("storage.yaml", "  rdma: false\n", "  rdma: no\n"),
        "storage.yaml",
        "aistor.rdma",
        "valid boolean",  # `no` is text in YAML 1.2, as Kubernetes reads it: not silently false
    ),
    case(
        "unhashable-yaml-key",
        add_text("storage.yaml", "? [a, b]\n: 1\n"),
        "storage.yaml",
        "",
        "a mapping key must be a scalar",
    ),
    # --- shape and types -----------------------------------------------------------------------
    case(
        "untainted-system-pool",
        set_value("pools.yaml", "infra", "taints", value=[]),
        "pools.yaml",
        "infra.taints",
        "the system pools need a NoSchedule taint",
    ),
    case(
        "unknown-key-pool",
        set_value("pools.yaml", "compute", "rack", value="r1"),
        "pools.yaml",
        "compute.rack",
        "Extra inputs are not permitted",
    ),
    case(
        "unknown-key-host",
        on_hosts(set_value("pools.yaml", "gpu", "hosts", 3, "rack", value="r1")),
        "pools.yaml",
        "gpu.hosts[3].rack",
        "Extra inputs are not permitted",
    ),
    case(
        "unknown-key-k8s-plane",
        set_value("network.yaml", "kubernetes", "speed", value=100),
        "network.yaml",
        "kubernetes.speed",
        "Extra inputs are not permitted",
    ),
    case(
        "argocd-unknown-role",
        set_value("gitops.yaml", "argocd", "rbac", "platform-admins", value="superuser"),
        "gitops.yaml",
        "argocd.rbac.platform-admins",
        "Input should be 'admin' or 'readonly'",
    ),
    case(
        "argocd-sso-over-http",
        set_value("gitops.yaml", "argocd", "sso", "issuer", value="http://sso.example/realms/site"),
        "gitops.yaml",
        "argocd.sso.issuer",
        "should match pattern",
    ),
    case(
        "tenant-quota-below-the-served-models",
        set_value("tenants.yaml", "ai-research", "quota", "storage_gb", value=100),
        "tenants.yaml",
        "ai-research.quota.storage_gb",
        "cannot hold the served models' weight caches (400 GB)",
    ),
    case(
        "tenant-quota-beyond-the-gpu-pools",
        set_value("tenants.yaml", "ai-research", "quota", "gpus", value=500),
        "tenants.yaml",
        "ai-research.quota.gpus",
        "500 is more than the GPU pools hold (96)",
    ),
    case(
        "tenant-cohort-without-its-gpus",
        set_value("tenants.yaml", "ai-research", "cohort", value="research"),
        "tenants.yaml",
        "ai-research.guaranteed_gpus",
        "give both cohort and guaranteed_gpus, or neither",
    ),
    case(
        "tenant-cohort-beyond-the-gpu-pools",
        both(
            set_value("tenants.yaml", "ai-research", "cohort", value="research"),
            set_value("tenants.yaml", "ai-research", "guaranteed_gpus", value=100),
        ),
        "tenants.yaml",
        "ai-research.guaranteed_gpus",
        "cohort research needs 4 GPUs more than whole nodes of the GPU pools leave it",
    ),
    case(
        "bmc-plane-too-small",
        set_value("network.yaml", "management", "bmc", "cidr", value="10.10.0.0/28"),
        "network.yaml",
        "management.bmc.cidr",
        "10.10.0.0/28 holds 13 host addresses; the pools have 102 hosts",
    ),
    case(
        "backup-schedule-beyond-a-week",
        set_value("services.yaml", "backups", "etcd", "schedule", value="0 0 1 * *"),
        "services.yaml",
        "backups.etcd.schedule",
        "day of month and month must be *",
    ),
    case(
        "backup-lock-outlives-retention",
        set_value("storage.yaml", "aistor", "bucket_protection", "site-backups", "lock_days", value=20),
        "storage.yaml",
        "aistor.bucket_protection.site-backups.lock_days",
        "20 days outlive the shortest backup retention (14 days)",
    ),
    case(
        "protection-of-an-unknown-bucket",
        set_value("storage.yaml", "aistor", "bucket_protection", "scratch", value={"versioning": True}),
        "storage.yaml",
        "aistor.bucket_protection.scratch",
        "no consumer of the site writes bucket 'scratch'",
    ),
    case(
        "unknown-key-rail",
        set_value("fabric.yaml", "rails", "A", "vlan", value=30),
        "fabric.yaml",
        "rails.A.vlan",
        "Extra inputs are not permitted",
    ),
    case(
        "unknown-top-level-key",
        set_value("versions.yaml", "helm", value="v3"),
        "versions.yaml",
        "helm",
        "Extra inputs are not permitted",
    ),
    case(
        "missing-required-field",
        delete("pools.yaml", "gpu", "hardware"),
        "pools.yaml",
        "gpu.hardware",
        "Field required",
    ),
    case(
        "count-not-a-number",
        set_value("pools.yaml", "compute", "count", value="five"),
        "pools.yaml",
        "compute.count",
        "valid integer",
    ),
    case(
        "label-value-boolean",
        set_value("pools.yaml", "gpu", "labels", "accelerator", value=True),
        "pools.yaml",
        "gpu.labels.accelerator",
        "valid string (got True)",
    ),
    case(
        "count-zero",
        set_value("pools.yaml", "infra", "count", value=0),
        "pools.yaml",
        "infra.count",
        "greater than 0",
    ),
    case(
        "count-negative",
        set_value("pools.yaml", "infra", "count", value=-5),
        "pools.yaml",
        "infra.count",
        "greater than 0",
    ),
    case(
        "host-address-not-ip",
        on_hosts(set_value("pools.yaml", "compute", "hosts", 0, "address", value="10.20.1.300")),
        "pools.yaml",
        "compute.hosts[0].address",
        "valid IPv4 address",
    ),
    case(
        "host-name-not-dns",
        on_hosts(set_value("pools.yaml", "compute", "hosts", 0, "name", value="CMP_01")),
        "pools.yaml",
        "compute.hosts[0].name",
        "is not a DNS label",
    ),
    case(
        "vlan-out-of-range",
        set_value("network.yaml", "management", "bmc", "vlan", value=5000),
        "network.yaml",
        "management.bmc.vlan",
        "less than or equal to 4094",
    ),
    case(
        "cidr-host-bits",
        set_value("clusters.yaml", "ai", "pod_cidr", value="10.64.0.1/16"),
        "clusters.yaml",
        "ai.pod_cidr",
        "10.64.0.1/16 has host bits set: the network is 10.64.0.0/16",  # not just "not a network"
    ),
    case(
        "cidr-not-an-address",
        set_value("clusters.yaml", "ai", "pod_cidr", value="10.64.0/16"),
        "clusters.yaml",
        "ai.pod_cidr",
        "IPv4 network",
    ),
    case(
        "key-with-newline",
        set_value("pools.yaml", "compute", "labels", "bad\nkey", value="x"),
        "pools.yaml",
        "compute.labels['bad\\nkey']",
        "label key",
    ),
    # --- storage -------------------------------------------------------------------------------
    case(
        "aistor-unknown-pool",
        set_value("storage.yaml", "aistor", "pool", value="stor"),
        "storage.yaml",
        "aistor.pool",
        "unknown pool 'stor'",
    ),
    case(
        "local-cache-unknown-pool",
        append("storage.yaml", "local_cache", "pools", value="cpu"),
        "storage.yaml",
        "local_cache.pools[2]",
        "unknown pool 'cpu'",
    ),
    # --- versions ------------------------------------------------------------------------------
    case(
        "missing-image-pin",
        delete("versions.yaml", "images", "kube-vip"),
        "versions.yaml",
        "images.kube-vip",
        "missing pin (needed by the API VIP static pod)",
    ),
    case(
        "chart-version-latest",
        set_value("versions.yaml", "charts", "cilium", "version", value="latest"),
        "versions.yaml",
        "charts.cilium.version",
        "'latest' is not an exact version",
    ),
    case(
        "chart-version-range",
        set_value("versions.yaml", "charts", "cilium", "version", value="^1.2"),
        "versions.yaml",
        "charts.cilium.version",
        "'^1.2' is not an exact version",
    ),
    case(
        "image-tag-latest",
        set_value("versions.yaml", "images", "kube-vip", "tag", value="latest"),
        "versions.yaml",
        "images.kube-vip.tag",
        "'latest' is not a pinned image tag",
    ),
    case(
        "chart-repo-http",
        set_value("versions.yaml", "charts", "cilium", "repo", value="http://helm.cilium.io/"),
        "versions.yaml",
        "charts.cilium.repo",
        "should match pattern",
    ),
    case(
        "kubernetes-version-short",
        set_value("versions.yaml", "kubernetes", value="1.35"),
        "versions.yaml",
        "kubernetes",
        "(got '1.35')",
    ),
    # --- services and dashboards --------------------------------------------------------------
    case(
        "platform-volumes-without-infra",
        remove_item("storage.yaml", "local_cache", "pools", item="infra"),
        "storage.yaml",
        "local_cache.pools",
        "must list 'infra': Prometheus, Alertmanager, Loki and Harbor keep their volumes there",
    ),
    case(
        "prometheus-volume-larger-than-the-node",
        set_value("services.yaml", "monitoring", "prometheus", "volume_gb", value=16000),
        "services.yaml",
        "monitoring.prometheus.volume_gb",
        "with logs.volume_gb it exceeds the 15360 GB of NVMe of an infra node",
    ),
    case(
        "prometheus-retention-zero",
        set_value("services.yaml", "monitoring", "prometheus", "retention_days", value=0),
        "services.yaml",
        "monitoring.prometheus.retention_days",
        "greater than or equal to 1",
    ),
    case(
        "serving-unknown-tenant",
        set_value("services.yaml", "serving", "tenant", value="nobody"),
        "services.yaml",
        "serving.tenant",
        "unknown tenant 'nobody'",
    ),
    case(
        "registry-unknown-powerscale-class",
        both(
            set_value("services.yaml", "registry", "storage", value="powerscale"),
            set_value("services.yaml", "registry", "powerscale_class", value="scratch"),
        ),
        "services.yaml",
        "registry.powerscale_class",
        "unknown PowerScale class 'scratch'",
    ),
    case(
        "proxy-cache-twice-for-one-registry",
        set_value(
            "services.yaml",
            "registry",
            "proxy_cache",
            "nvcr2",
            value={"type": "docker-registry", "url": "https://nvcr.io"},
        ),
        "services.yaml",
        "registry.proxy_cache.nvcr2.url",
        "nvcr.io is already cached by 'nvcr' (one containerd mirror per registry)",
    ),
    case(
        "bucket-name-uppercase",
        set_value("services.yaml", "logs", "bucket", value="Loki_Chunks"),
        "services.yaml",
        "logs.bucket",
        "should match pattern",
    ),
    case(
        "dashboard-unknown-datasource",
        write_text(
            "dashboards/gpu.json",
            '{"uid": "site-gpu", "title": "GPUs", "panels": [{"datasource": {"uid": "influx"}}]}',
        ),
        "dashboards/gpu.json",
        "panels[0].datasource",
        "data source 'influx' is not provisioned (one of loki, prometheus)",
    ),
    case(
        "dashboard-not-json",
        write_text("dashboards/gpu.json", '{"uid": "site-gpu",'),
        "dashboards/gpu.json",
        "",
        "JSON error: line 1, column 20: Expecting property name",
    ),
    case(
        "dashboard-duplicate-uid",
        write_text("dashboards/zz.json", '{"uid": "site-gpu", "title": "again", "panels": [{}]}'),
        "dashboards/zz.json",
        "uid",
        "uid 'site-gpu' is also gpu's",
    ),
    # --- faults in two files: the first file in load order is named --------------------------
    case(
        "first-of-two-faults",
        both(write_text("variants.yaml", ""), write_text("hardware.yaml", "")),
        "hardware.yaml",
        "",
        "file is empty",
    ),
]


# --- the tests ---------------------------------------------------------------------------------


def test_default_config_synthesizes(config_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("synthesized ")
    assert tree_bytes(out) == tree_bytes(DIST)


def test_yaml_round_trip_keeps_the_site(config_copy: Path, tmp_path: Path) -> None:
    """The cases rewrite files through edit_yaml; the rewrite alone must not change the output. Nor
    must writing the default host ranges out host by host (the cases that break one host do)."""
    for file in sorted(p.name for p in config_copy.glob("*.yaml")):
        edit_yaml(config_copy, file, lambda data: None)
    expand_ranges(config_copy)
    assert "names:" not in (config_copy / "pools.yaml").read_text()
    out = tmp_path / "out"
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    # INPUTS fingerprints the bytes synth read (the rewritten files), not the site they describe
    rewritten, original = tree_bytes(out), tree_bytes(DIST)
    assert rewritten.pop("INPUTS") != original.pop("INPUTS")
    assert rewritten == original


@pytest.mark.parametrize(("mutate", "file", "field", "message"), CASES)
def test_config_error(mutate, file: str, field: str, message: str, config_copy: Path, out_copy: Path) -> None:
    check_case(mutate, file, field, message, config_copy, out_copy)


def test_duplicate_host_through_the_console_script(config_copy: Path, out_copy: Path) -> None:
    """The acceptance case end to end, in a real process: exit 2, one line, dist untouched."""
    on_hosts(set_value("pools.yaml", "gpu", "hosts", 0, "name", value="cmp01"))(config_copy)
    before = tree_bytes(out_copy)
    result = run_sitegen("synth", "--config", config_copy, "--out", out_copy)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "pools.yaml: gpu.hosts[0].name: duplicate host 'cmp01'" in result.stderr
    assert tree_bytes(out_copy) == before


def test_every_field_error_at_once(config_copy: Path, out_copy: Path) -> None:
    """Two wrong fields in two files: both are named, one line each, exit 2, dist untouched."""
    set_value("network.yaml", "kubernetes", "mtu", value=100)(config_copy)
    set_value("gitops.yaml", "argocd", "rbac", "platform-admins", value="superuser")(config_copy)
    before = tree_bytes(out_copy)
    result = invoke_sitegen("synth", "--config", config_copy, "--out", out_copy)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines), result.stderr
    assert any("/network.yaml: kubernetes.mtu: " in line for line in lines)
    assert any("/gitops.yaml: argocd.rbac.platform-admins: " in line for line in lines)
    assert tree_bytes(out_copy) == before
