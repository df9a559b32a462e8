"""Kueue, the job-queueing controller ("job scheduler components" of the seed), on the system pool."""

from __future__ import annotations

from typing import Any

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests


class KueueValues(Values):
    controllerManager: dict[str, Any]


def kueue_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> KueueValues:
    return KueueValues(
        controllerManager={
            "replicas": 2,  # leader election; the webhook stays available during a restart
            "manager": {"resources": requests("500m", "512Mi", "2Gi")},
            **placed(cluster.system_pool.placement),
        }
    )
