"""What Prometheus scrapes beyond the chart's own monitors, and the site's dashboards.

The site's alert rules are in constructs/site_alerts.py, what takes a GPU node out of service in
constructs/node_faults.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from constructs import Construct
from constructs.objects import SKIP_DRY_RUN, api_object

MONITORING = "monitoring.coreos.com/v1"


@dataclass(frozen=True)
class PodTarget:
    """Pods whose named port Prometheus scrapes."""

    name: str
    namespace: str
    selector: dict[str, str]
    port: str


CILIUM_TARGETS = [
    PodTarget("cilium-agent", "kube-system", {"k8s-app": "cilium"}, "prometheus"),
    PodTarget("hubble", "kube-system", {"k8s-app": "cilium"}, "hubble-metrics"),
    PodTarget("cilium-operator", "kube-system", {"io.cilium/app": "operator"}, "prometheus"),
]


class PodMonitors(Construct):
    def __init__(self, scope: Construct, id: str, *, namespace: str, targets: list[PodTarget]) -> None:
        super().__init__(scope, id)
        for target in targets:
            api_object(
                self,
                target.name,
                MONITORING,
                "PodMonitor",
                {"name": target.name, "namespace": namespace, "annotations": SKIP_DRY_RUN},
                spec={
                    "namespaceSelector": {"matchNames": [target.namespace]},
                    "selector": {"matchLabels": target.selector},
                    "podMetricsEndpoints": [{"port": target.port, "interval": "30s", "honorLabels": True}],
                },
            )


class Dashboards(Construct):
    """The repo's dashboards as ConfigMaps that Grafana's sidecar loads into the `Site` folder."""

    def __init__(self, scope: Construct, id: str, *, namespace: str, dashboards: dict[str, Any]) -> None:
        super().__init__(scope, id)
        for name, dashboard in sorted(dashboards.items()):
            api_object(
                self,
                name,
                "v1",
                "ConfigMap",
                {
                    "name": f"dashboard-{name}",
                    "namespace": namespace,
                    "labels": {"grafana_dashboard": "1"},
                    "annotations": {"grafana_folder": "Site"},
                },
                data={
                    f"{name}.json": json.dumps(dashboard.model_dump(mode="json"), indent=2, sort_keys=True)
                    + "\n"
                },
            )


class DashboardReader(Construct):
    """Lets Grafana's dashboard sidecar (a ServiceAccount of another namespace) read the ConfigMaps of
    this one: the alternative is a ClusterRole over every ConfigMap and Secret of the cluster."""

    def __init__(
        self, scope: Construct, id: str, *, namespace: str, account: str, account_namespace: str
    ) -> None:
        super().__init__(scope, id)
        name = f"{account}-dashboards"
        api_object(
            self,
            "Role",
            "rbac.authorization.k8s.io/v1",
            "Role",
            {"name": name, "namespace": namespace},
            rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
        )
        api_object(
            self,
            "Binding",
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            {"name": name, "namespace": namespace},
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            subjects=[{"kind": "ServiceAccount", "name": account, "namespace": account_namespace}],
        )
