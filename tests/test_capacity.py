"""Capacity computed once (sitegen.model.capacity): the plan, the picture, the tenants' default quotas
and the GPU queue's nominal quota all read the same figures."""

from __future__ import annotations

from sitegen.model import resolve
from sitegen.model.capacity import Capacity, total
from sitegen.report.plan import pool_figures


def test_the_gpu_pools_hold_what_their_hardware_says(site):
    gpus = site.gpu_capacity()
    hw = site.hardware_of("gpu")
    assert gpus == Capacity.of(hw, site.pools["gpu"].count)
    assert (gpus.nodes, gpus.gpus) == (12, 96)
    assert gpus.hbm_gb == 96 * hw.gpu.hbm_gb
    assert Capacity.of(hw, 2) + Capacity.of(hw, 3) == Capacity.of(hw, 5) == total([Capacity.of(hw, 5)])


def test_a_clusters_layout_and_the_config_agree(site):
    for variant in site.variants:
        layout = resolve(site, variant)
        in_clusters = total(p.capacity for c in layout.clusters for p in c.pools if p.hardware.gpu)
        assert in_clusters == site.gpu_capacity(), variant


def test_the_plan_the_quota_and_the_queue_read_the_same_figures(site, docs):
    figures = pool_figures(site, "gpu")
    held = site.pool_capacity("gpu")
    assert (figures.cores, figures.memory_gb, figures.gpus, figures.hbm_gb) == (
        held.cpu_cores, held.memory_gb, held.gpus, held.hbm_gb,
    )  # fmt: skip
    ai = [d for d in docs if d.variant == "one-cluster" and d.cluster == "ai"]
    (queue,) = [d for d in ai if d.kind == "ClusterQueue"]
    (flavor,) = queue.body["spec"]["resourceGroups"][0]["flavors"]
    nominal = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert (nominal["nvidia.com/gpu"], nominal["cpu"]) == (held.gpus, held.cpu_cores)
    (quota,) = [d for d in ai if d.kind == "ResourceQuota" and d.namespace == "ai-research"]
    assert quota.body["spec"]["hard"]["requests.nvidia.com/gpu"] == str(held.gpus)
