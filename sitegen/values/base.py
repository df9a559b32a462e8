"""Helm values of the upstream charts, as typed models built from the site model.

Each model names only keys the pinned chart version has (extra keys are refused), so a typo fails at
synth instead of being ignored by Helm. Placement always comes from a pool's `placement`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from sitegen.layout import Placement, PoolLayout


class Values(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    def document(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def requests(cpu: str, memory: str, memory_limit: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if memory_limit:
        out["limits"] = {"memory": memory_limit}
    return out


def placed(placement: Placement) -> dict[str, Any]:
    return {"nodeSelector": placement.node_selector, "tolerations": list(placement.tolerations)}


def required_affinity(pools: list[PoolLayout]) -> dict[str, Any]:
    """Node affinity to any of `pools`, for charts (or components) that take no nodeSelector."""
    terms = [
        {
            "matchExpressions": [
                {"key": k, "operator": "In", "values": [v]} for k, v in p.placement.node_selector.items()
            ]
        }
        for p in pools
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
