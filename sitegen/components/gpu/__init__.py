"""The `gpu` project: the GPU pool's operator and the job queues."""

from __future__ import annotations

from typing import TYPE_CHECKING

from constructs.namespaces import DEFAULT_TOLERATIONS, MEMORY_PRESSURE_TOLERATION
from sitegen.components.base import Project

if TYPE_CHECKING:
    from sitegen.components.context import ClusterContext

PROJECT = Project("gpu", "the GPU pool: GPU Operator, Kueue and its queues")


def gpu_job_tolerations(ctx: ClusterContext) -> list[dict[str, str]]:
    """What pods of a namespace that runs GPU jobs may tolerate (PodTolerationRestriction): the GPU
    pools' taints, what DefaultTolerationSeconds adds to every pod, and what PodTolerationRestriction
    adds to a pod that requests CPU or memory. Control-plane, storage and infra-only nodes stay out of
    reach."""
    found = [dict(t) for pool in ctx.gpu_pools for t in pool.placement.tolerations]
    return [*found, *DEFAULT_TOLERATIONS, MEMORY_PRESSURE_TOLERATION]
