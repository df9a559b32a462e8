"""Every broken config makes `sitegen synth` print one `error: <file>: <field>: <message>` line and exit 2.

Each case breaks a private copy of config/ in one way and runs the real CLI against it, with `--out`
pointing at a copy of an already synthesized tree that must come through byte for byte untouched.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import edit_yaml, invoke_sitegen, run_sitegen, tree_bytes

# A mutation breaks the config directory it is given; it may return another path to pass as --config.
Mutation = Callable[[Path], Path | None]
Key = str | int


# --- mutations ---------------------------------------------------------------------------------


def _parent(data: Any, path: tuple[Key, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def set_value(file: str, *path: Key, value: Any) -> Mutation:
    """Set the value at `path` (keys and list indices) in `file`, adding the key if it is new."""

    def change(data: Any) -> None:
        _parent(data, path)[path[-1]] = value

    return lambda cfg: edit_yaml(cfg, file, change)


def delete(file: str, *path: Key) -> Mutation:
    def change(data: Any) -> None:
        del _parent(data, path)[path[-1]]

    return lambda cfg: edit_yaml(cfg, file, change)


def append(file: str, *path: Key, value: Any) -> Mutation:
    def change(data: Any) -> None:
        _parent(data, path)[path[-1]].append(value)

    return lambda cfg: edit_yaml(cfg, file, change)


def remove_item(file: str, *path: Key, item: Any) -> Mutation:
    """Remove `item` from the list at `path`."""

    def change(data: Any) -> None:
        _parent(data, path)[path[-1]].remove(item)

    return lambda cfg: edit_yaml(cfg, file, change)


def rename_key(file: str, *path: Key, to: str) -> Mutation:
    """Rename the mapping key at `path`, keeping its position."""

    def change(data: Any) -> None:
        mapping = _parent(data, path)
        items = [(to if k == path[-1] else k, v) for k, v in mapping.items()]
        mapping.clear()
        mapping.update(items)

    return lambda cfg: edit_yaml(cfg, file, change)


def write_text(file: str, text: str) -> Mutation:
    def mutate(cfg: Path) -> None:
        (cfg / file).write_text(text)

    return mutate


def add_text(file: str, text: str) -> Mutation:
    """Append raw text, for faults that a YAML round trip cannot express."""

    def mutate(cfg: Path) -> None:
        with (cfg / file).open("a") as handle:
            handle.write(text)

    return mutate


def replace_text(file: str, old: str, new: str) -> Mutation:
    def mutate(cfg: Path) -> None:
        text = (cfg / file).read_text()
        assert text.count(old) == 1, f"{old!r} must occur exactly once in {file}"
        (cfg / file).write_text(text.replace(old, new))

    return mutate


def add_bytes(file: str, data: bytes) -> Mutation:
    def mutate(cfg: Path) -> None:
        path = cfg / file
        path.write_bytes(path.read_bytes() + data)

    return mutate


def remove_file(file: str) -> Mutation:
    return lambda cfg: (cfg / file).unlink()


def missing_directory(cfg: Path) -> Path:
    return cfg.parent / "no-such-config"


def both(*mutations: Mutation) -> Mutation:
    def mutate(cfg: Path) -> None:
        for mutation in mutations:
            mutation(cfg)

    return mutate


# Shorthands for the places most cases break.
GPU_NICS = ("nics", "gpu")
AISTOR_CARVE = ("two-cluster", "clusters", "aistor", "control_plane")
ONE_CLUSTER_AI_POOLS = ("one-cluster", "clusters", "ai", "pools")


def case(case_id: str, mutate: Mutation, file: str, field: str, message: str = "", xfail: str = "") -> Any:
    marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
    return pytest.param(mutate, file, field, message, id=case_id, marks=marks)


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
        "duplicate key 'cpu_cores'",
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
        "unknown-key-pool",
        set_value("pools.yaml", "compute", "rack", value="r1"),
        "pools.yaml",
        "compute.rack",
        "Extra inputs are not permitted",
    ),
    case(
        "unknown-key-host",
        set_value("pools.yaml", "gpu", "hosts", 3, "rack", value="r1"),
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
        set_value("pools.yaml", "compute", "hosts", 0, "address", value="10.20.1.300"),
        "pools.yaml",
        "compute.hosts[0].address",
        "valid IPv4 address",
    ),
    case(
        "host-name-not-dns",
        set_value("pools.yaml", "compute", "hosts", 0, "name", value="CMP_01"),
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
        "IPv4 network",
    ),
    case(
        "key-with-newline",
        set_value("pools.yaml", "compute", "labels", "bad\nkey", value="x"),
        "pools.yaml",
        "compute.labels['bad\\nkey']",
        "label key",
    ),
    # --- pools ---------------------------------------------------------------------------------
    case(
        "duplicate-host-name",
        set_value("pools.yaml", "compute", "hosts", 0, "name", value="infra01"),
        "pools.yaml",
        "compute.hosts[0].name",
        "duplicate host 'infra01' (also at pools.infra.hosts[0].name)",
    ),
    case(
        "duplicate-host-address",
        set_value("pools.yaml", "gpu", "hosts", 1, "address", value="10.20.1.1"),
        "pools.yaml",
        "gpu.hosts[1].address",
        "duplicate address 10.20.1.1 (also at pools.compute.hosts[0]",
    ),
    case(
        "host-outside-k8s-plane",
        set_value("pools.yaml", "storage", "hosts", 29, "address", value="10.21.0.30"),
        "pools.yaml",
        "storage.hosts[29].address",
        "outside the Kubernetes plane 10.20.0.0/22",
    ),
    case(
        "host-count-mismatch",
        delete("pools.yaml", "infra", "hosts", 4),
        "pools.yaml",
        "infra.hosts",
        "4 hosts listed but count is 5",
    ),
    case(
        "count-above-hosts",
        set_value("pools.yaml", "gpu", "count", value=13),
        "pools.yaml",
        "gpu.hosts",
        "12 hosts listed but count is 13",
    ),
    case(
        "no-role-label",
        delete("pools.yaml", "infra", "labels", "node-role.kubernetes.io/infra"),
        "pools.yaml",
        "infra.labels",
        "found none",
    ),
    case(
        "two-role-labels",
        set_value("pools.yaml", "compute", "labels", "node-role.kubernetes.io/batch", value="true"),
        "pools.yaml",
        "compute.labels",
        "needs exactly one 'node-role.kubernetes.io/<role>' label",
    ),
    case(
        "role-claimed-twice",
        rename_key(
            "pools.yaml",
            "compute",
            "labels",
            "node-role.kubernetes.io/compute",
            to="node-role.kubernetes.io/infra",
        ),
        "pools.yaml",
        "infra.labels",
        "role 'infra' is claimed by more than one pool",
    ),
    case(
        "no-control-plane-pool",
        rename_key(
            "pools.yaml",
            "control-plane",
            "labels",
            "node-role.kubernetes.io/control-plane",
            to="node-role.kubernetes.io/master",
        ),
        "pools.yaml",
        "",
        "exactly one pool must carry the role 'control-plane'",
    ),
    case(
        "invalid-label-key",
        set_value("pools.yaml", "compute", "labels", "bad key!", value="x"),
        "pools.yaml",
        "compute.labels['bad key!']",
        "label key 'bad key!'",
    ),
    case(
        "invalid-label-value",
        set_value("pools.yaml", "gpu", "labels", "accelerator", value="-x"),
        "pools.yaml",
        "gpu.labels.accelerator",
        "label value '-x'",
    ),
    case(
        "invalid-taint-effect",
        set_value("pools.yaml", "gpu", "taints", 0, "effect", value="NoRun"),
        "pools.yaml",
        "gpu.taints[0].effect",
        "(got 'NoRun')",
    ),
    case(
        "unknown-hardware",
        set_value("pools.yaml", "compute", "hardware", value="hpe-dl360"),
        "pools.yaml",
        "compute.hardware",
        "unknown hardware model 'hpe-dl360'",
    ),
    # --- fabric --------------------------------------------------------------------------------
    case(
        "nic-undefined-rail",
        set_value("fabric.yaml", *GPU_NICS, 2, "rail", value="E"),
        "fabric.yaml",
        "nics.gpu[2].rail",
        "undefined rail 'E'",
    ),
    case(
        "gpu-on-two-nics",
        set_value("fabric.yaml", *GPU_NICS, 1, "gpus", value=[1, 2, 3]),
        "fabric.yaml",
        "nics.gpu[1].gpus",
        "GPU 1 is mapped to two NICs (mlx5_0, mlx5_1)",
    ),
    case(
        "gpu-on-no-nic",
        set_value("fabric.yaml", *GPU_NICS, 3, "gpus", value=[6]),
        "fabric.yaml",
        "nics.gpu",
        "GPUs [7] are mapped to no NIC",
    ),
    case(
        "gpu-index-missing",
        set_value("fabric.yaml", *GPU_NICS, 3, "gpus", value=[6, 7, 8]),
        "fabric.yaml",
        "nics.gpu[3].gpus",
        "GPU 8 does not exist (the node has 8)",
    ),
    case(
        "nic-count-mismatch",
        delete("fabric.yaml", "nics", "storage", 1),
        "fabric.yaml",
        "nics.storage",
        "1 NICs mapped but lenovo-sr650-v4 has 2",
    ),
    case(
        "duplicate-nic",
        set_value("fabric.yaml", *GPU_NICS, 1, "name", value="mlx5_0"),
        "fabric.yaml",
        "nics.gpu[1].name",
        "duplicate NIC 'mlx5_0'",
    ),
    case(
        "gpus-on-gpuless-pool",
        set_value("fabric.yaml", "nics", "storage", 0, "gpus", value=[0]),
        "fabric.yaml",
        "nics.storage[0].gpus",
        "pool storage has no GPUs to map",
    ),
    case(
        "nics-unknown-pool",
        rename_key("fabric.yaml", "nics", "storage", to="stor"),
        "fabric.yaml",
        "nics.stor",
        "unknown pool 'stor'",
    ),
    case(
        "ndr-pool-without-nics",
        delete("fabric.yaml", "nics", "storage"),
        "fabric.yaml",
        "nics",
        "pool storage has NDR ports but no NIC-to-rail map",
    ),
    # --- clusters and address ranges -----------------------------------------------------------
    case(
        "rail-cidr-overlap",
        set_value("fabric.yaml", "rails", "B", "cidr", value="10.100.0.0/20"),
        "fabric.yaml",
        "rails.B.cidr",
        "overlaps 10.100.0.0/20 (fabric.rails.A.cidr)",
    ),
    case(
        "pod-cidr-overlap",
        set_value("clusters.yaml", "aistor", "pod_cidr", value="10.64.0.0/16"),
        "clusters.yaml",
        "aistor.pod_cidr",
        "overlaps 10.64.0.0/16 (clusters.ai.pod_cidr)",
    ),
    case(
        "service-cidr-overlaps-mgmt",
        set_value("clusters.yaml", "ai", "service_cidr", value="10.11.1.0/24"),
        "clusters.yaml",
        "ai.service_cidr",
        "overlaps 10.11.0.0/23 (network.management.os.cidr)",
    ),
    case(
        "lb-pools-overlap",
        set_value("clusters.yaml", "aistor", "load_balancer_cidr", value="10.20.3.0/24"),
        "clusters.yaml",
        "aistor.load_balancer_cidr",
        "overlaps 10.20.3.0/25 (clusters.ai.load_balancer_cidr)",
    ),
    case(
        "vip-outside-plane",
        set_value("clusters.yaml", "ai", "api", "vip", value="10.30.0.10"),
        "clusters.yaml",
        "ai.api.vip",
        "10.30.0.10 must lie inside the Kubernetes plane 10.20.0.0/22",
    ),
    case(
        "vip-is-host-address",
        set_value("clusters.yaml", "ai", "api", "vip", value="10.20.0.11"),
        "clusters.yaml",
        "ai.api.vip",
        "10.20.0.11 is the address of host cp01",
    ),
    case(
        "vip-inside-own-lb-pool",
        set_value("clusters.yaml", "ai", "api", "vip", value="10.20.3.10"),
        "clusters.yaml",
        "ai.api.vip",
        "lies inside the load-balancer pool",
    ),
    case(
        "vip-shared-by-two-clusters",
        set_value("clusters.yaml", "aistor", "api", "vip", value="10.20.0.10"),
        "clusters.yaml",
        "aistor.api.vip",
        "10.20.0.10 is also the API VIP of ai",
    ),
    case(
        "dns-name-shared-by-two-clusters",
        set_value("clusters.yaml", "aistor", "api", "dns_name", value="api.ai.hpc.example.internal"),
        "clusters.yaml",
        "aistor.api.dns_name",
        "is also the API name of ai",
    ),
    case(
        "vip-inside-other-lb-pool",
        set_value("clusters.yaml", "aistor", "api", "vip", value="10.20.3.5"),
        "clusters.yaml",
        "aistor.api.vip",
        "lies inside the load-balancer pool of ai",
    ),
    case(
        "lb-cidr-outside-plane",
        set_value("clusters.yaml", "ai", "load_balancer_cidr", value="10.30.3.0/25"),
        "clusters.yaml",
        "ai.load_balancer_cidr",
        "must lie inside the Kubernetes plane",
    ),
    case(
        "lb-cidr-holds-host",
        set_value("clusters.yaml", "ai", "load_balancer_cidr", value="10.20.1.0/25"),
        "clusters.yaml",
        "ai.load_balancer_cidr",
        "contains the address of host cmp",
    ),
    case(
        "duplicate-cluster-id",
        set_value("clusters.yaml", "aistor", "id", value=1),
        "clusters.yaml",
        "aistor.id",
        "id 1 is also used by ai",
    ),
    # --- variants ------------------------------------------------------------------------------
    case(
        "variant-unknown-pool",
        append("variants.yaml", *ONE_CLUSTER_AI_POOLS, value="gpus"),
        "variants.yaml",
        "one-cluster.clusters.ai.pools[5]",
        "unknown pool 'gpus'",
    ),
    case(
        "pool-in-two-clusters",
        append("variants.yaml", "two-cluster", "clusters", "aistor", "pools", value="gpu"),
        "variants.yaml",
        "two-cluster.clusters.aistor.pools[1]",
        "pool 'gpu' is already in cluster 'ai'",
    ),
    case(
        "pool-in-no-cluster",
        remove_item("variants.yaml", *ONE_CLUSTER_AI_POOLS, item="compute"),
        "variants.yaml",
        "one-cluster",
        "pool 'compute' is in no cluster",
    ),
    # Dropping the control-plane pool from one-cluster leaves that pool in no cluster, which the model
    # reports first; the missing control plane itself is the next case.
    case(
        "control-plane-pool-dropped",
        remove_item("variants.yaml", *ONE_CLUSTER_AI_POOLS, item="control-plane"),
        "variants.yaml",
        "one-cluster",
        "pool 'control-plane' is in no cluster",
    ),
    case(
        "cluster-without-control-plane",
        delete("variants.yaml", *AISTOR_CARVE),
        "variants.yaml",
        "two-cluster.clusters.aistor",
        "needs exactly one control plane",
    ),
    case(
        "cluster-with-two-control-planes",
        set_value(
            "variants.yaml",
            "one-cluster",
            "clusters",
            "ai",
            "control_plane",
            value={"from_pool": "compute", "hosts": ["cmp01"]},
        ),
        "variants.yaml",
        "one-cluster.clusters.ai",
        "needs exactly one control plane",
    ),
    case(
        "carve-even-hosts",
        set_value("variants.yaml", *AISTOR_CARVE, "hosts", value=["cmp49", "cmp50"]),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.hosts",
        "2 hosts: stacked etcd needs an odd",
    ),
    case(
        "carve-foreign-host",
        set_value("variants.yaml", *AISTOR_CARVE, "hosts", 2, value="infra05"),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.hosts[2]",
        "host 'infra05' is not in pool 'compute'",
    ),
    case(
        "carve-host-twice",
        set_value("variants.yaml", *AISTOR_CARVE, "hosts", 2, value="cmp48"),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.hosts",
        "lists a host twice",
    ),
    case(
        "carve-unknown-pool",
        set_value("variants.yaml", *AISTOR_CARVE, "from_pool", value="cpu"),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.from_pool",
        "unknown pool 'cpu'",
    ),
    case(
        "carve-tainted-pool",
        set_value("variants.yaml", *AISTOR_CARVE, value={"from_pool": "gpu", "hosts": ["gpu01"]}),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.from_pool",
        "tainted for a purpose",
    ),
    case(
        "carve-empties-pool",
        set_value(
            "variants.yaml",
            *AISTOR_CARVE,
            value={"from_pool": "infra", "hosts": ["infra01", "infra02", "infra03", "infra04", "infra05"]},
        ),
        "variants.yaml",
        "two-cluster.clusters.aistor.control_plane.hosts",
        "would leave pool 'infra' empty",
    ),
    case(
        "variant-unknown-cluster",
        rename_key("variants.yaml", "two-cluster", "clusters", "aistor", to="objects"),
        "variants.yaml",
        "two-cluster.clusters.objects",
        "unknown cluster 'objects'",
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


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default site synthesized once; each test copies it as the --out it must not touch."""
    out = tmp_path_factory.mktemp("synthesized") / "dist"
    result = run_sitegen("synth", "--out", out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def out_copy(synthesized: Path, tmp_path: Path) -> Path:
    """A previous output; a slice of the real tree keeps 80+ cases fast and proves the same."""
    target = tmp_path / "out"
    part = Path("one-cluster", "kubeadm")
    shutil.copytree(synthesized / part, target / part)
    return target


def test_default_config_synthesizes(config_copy: Path, tmp_path: Path, synthesized: Path) -> None:
    out = tmp_path / "out"
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("synthesized ")
    assert tree_bytes(out) == tree_bytes(synthesized)


def test_yaml_round_trip_keeps_the_site(config_copy: Path, tmp_path: Path, synthesized: Path) -> None:
    """The cases rewrite files through edit_yaml; the rewrite alone must not change the output."""
    for file in sorted(p.name for p in config_copy.glob("*.yaml")):
        edit_yaml(config_copy, file, lambda data: None)
    out = tmp_path / "out"
    result = run_sitegen("synth", "--config", config_copy, "--out", out)
    assert result.returncode == 0, result.stderr
    assert tree_bytes(out) == tree_bytes(synthesized)


@pytest.mark.parametrize(("mutate", "file", "field", "message"), CASES)
def test_config_error(
    mutate: Mutation, file: str, field: str, message: str, config_copy: Path, out_copy: Path
) -> None:
    config = mutate(config_copy) or config_copy
    before = tree_bytes(out_copy)

    result = invoke_sitegen("synth", "--config", config, "--out", out_copy)

    assert isinstance(result.exception, SystemExit), result.exception  # anything else is a traceback
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    line = result.stderr.removesuffix("\n")
    assert "\n" not in line, f"expected one line, got:\n{result.stderr}"
    assert line.startswith("error: ")
    # `/<file>: <field>: ` pins both exactly: the path ends in the file, the field runs to the next ': '.
    location = f"/{file}: {field}: " if field else f"/{file}: "
    assert location in line
    assert message in line
    assert tree_bytes(out_copy) == before


def test_duplicate_host_through_the_console_script(config_copy: Path, out_copy: Path) -> None:
    """The acceptance case end to end, in a real process: exit 2, one line, dist untouched."""
    set_value("pools.yaml", "gpu", "hosts", 0, "name", value="cmp01")(config_copy)
    before = tree_bytes(out_copy)
    result = run_sitegen("synth", "--config", config_copy, "--out", out_copy)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "pools.yaml: gpu.hosts[0].name: duplicate host 'cmp01'" in result.stderr
    assert tree_bytes(out_copy) == before
