"""NVIDIA Network Operator: the controller only; its NicClusterPolicy and friends are rendered by cdk8s."""

from __future__ import annotations

from typing import Any

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests


class NetworkOperatorValues(Values):
    nfd: dict[str, bool] = {"enabled": False, "deployNodeFeatureRules": False}
    sriovNetworkOperator: dict[str, bool] = {"enabled": False}
    operator: dict[str, Any]


def network_operator_values(
    site: Site, layout: VariantLayout, cluster: ClusterLayout
) -> NetworkOperatorValues:
    return NetworkOperatorValues(
        operator={"resources": requests("100m", "256Mi", "1Gi"), **placed(cluster.system_pool.placement)}
    )
