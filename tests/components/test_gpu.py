"""GPU components: the GPU Operator, Kueue, the GPU queues and the tenants (queue and NCCL benchmark)."""

from __future__ import annotations

from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.components.gpu.gpu_queues import GpuQueues
from sitegen.components.gpu.kueue import Kueue
from sitegen.components.tenants.tenant import Tenant

from .conftest import by_kind, context, output, render

GPU_TAINT = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def test_gpu_operator_operands_tolerate_the_gpu_taint_and_pin_the_driver(one, small):
    values = render(one, "ai", GpuOperator)
    assert GPU_TAINT in values["daemonsets"]["tolerations"]
    driver = small.versions.images["nvidia-driver"]
    assert f"{values['driver']['repository']}/{values['driver']['image']}" == driver.repository
    assert values["driver"]["version"] == driver.tag


def test_gpu_components_only_where_gpus_are(two):
    for kind in (GpuOperator, Kueue, GpuQueues):
        assert context(two, "ai").has(kind) and not context(two, "aistor").has(kind)


def test_cluster_queue_quota_is_the_pools_gpus(one, small):
    docs = render(one, "ai", GpuQueues)
    (queue,) = by_kind(docs, "ClusterQueue")
    quota = {
        r["name"]: r["nominalQuota"]
        for f in queue["spec"]["resourceGroups"][0]["flavors"]
        for r in f["resources"]
    }
    gpu = small.hardware_of("gpu").gpu
    assert quota["nvidia.com/gpu"] == small.pools["gpu"].count * gpu.count


def test_tenants_get_a_queue_and_the_benchmark_spans_the_gpu_pool(one, small):
    ctx = context(one, "ai")
    tenants = ctx.all(Tenant)
    assert sorted(t.tenant for t in tenants) == sorted(small.tenants)
    bench = next(t for t in tenants if small.tenants[t.tenant].nccl_benchmark)
    docs = output(ctx, bench)
    (queue,) = by_kind(docs, "LocalQueue")
    (job,) = by_kind(docs, "Job")
    assert queue["spec"]["clusterQueue"] == "gpu"
    assert job["spec"]["suspend"] is True and job["spec"]["completions"] == small.pools["gpu"].count


def test_tenants_take_turns_for_gpus_by_their_fair_share(small):
    """A tenant's fair_share is its LocalQueue's weight in Kueue's admission fair sharing, which the
    GPU ClusterQueue turns on; only GPUs count in the usage (a resource left out weighs 1 per unit,
    so cores and bytes of memory would decide the turns)."""
    import yaml

    from sitegen.compose.apps import variant_apps
    from sitegen.model import resolve

    first = sorted(small.tenants)[0]
    tenants = {**small.tenants, first: small.tenants[first].model_copy(update={"fair_share": 3})}
    apps = variant_apps(small.model_copy(update={"tenants": tenants}), resolve(small, "one-cluster"))
    ctx = context(apps, "ai")
    weights = {
        t.tenant: by_kind(output(ctx, t), "LocalQueue")[0]["spec"]["fairSharing"]["weight"]
        for t in ctx.all(Tenant)
    }
    assert weights[first] == 3 and all(w == 1 for name, w in weights.items() if name != first)
    (queue,) = by_kind(output(ctx, ctx.get(GpuQueues)), "ClusterQueue")
    assert queue["spec"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    config = yaml.safe_load(output(ctx, ctx.get(Kueue))["managerConfig"]["controllerManagerConfigYaml"])
    weights = config["admissionFairSharing"]["resourceWeights"]
    assert weights.pop("nvidia.com/gpu") == 1.0 and set(weights.values()) == {0.0}
    assert {"cpu", "memory"} <= set(weights)
