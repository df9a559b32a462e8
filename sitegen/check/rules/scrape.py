"""Scrape targets: each ServiceMonitor and PodMonitor we ship is read by a Prometheus of its cluster and
finds what it names, as the Prometheus Operator resolves them (the field descriptions of its CRDs at
the pinned version):

- a Prometheus (or PrometheusAgent) reads the monitors its `serviceMonitorSelector` (`podMonitorSelector`)
  selects, an empty selector all and none where it is unset, in the namespaces its
  `...NamespaceSelector` selects, unset its own namespace alone;
- a ServiceMonitor selects Services by labels in the namespaces of its `namespaceSelector` (`any`, or
  `matchNames`; unset: its own namespace) and scrapes the Service ports named by its endpoints' `port`;
  a PodMonitor selects pods alike and scrapes the container ports its endpoints' `port` names.

A monitor whose selector matches nothing, or none of whose objects has the port it names, keeps no
target: Prometheus says nothing and every series read from it is absent.

Some targets are made at run time, not shipped: the API server's Service `default/kubernetes`, the
kubelets' Service that prometheus-operator keeps (its `--kubelet-service`), CloudNativePG's instance
pods. They count as the facts below say. Not checked: whether a Service's own selector has pods (the
operators' StatefulSets and the control plane's static pods are made at run time too), monitors that
name ports by number (`targetPort`, `portNumber`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from constructs.monitoring import MONITORING as MONITORING_API
from sitegen.check.bringup.kube import pod_template
from sitegen.check.bringup.operators import CNPG_CLUSTER
from sitegen.check.labels import label_selector_matches
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

MONITORING = MONITORING_API.rpartition("/")[0]
PROMETHEUS_KINDS = ("Prometheus", "PrometheusAgent")
SELECTORS = {  # monitor kind -> the Prometheus fields that select it and its namespaces
    "ServiceMonitor": ("serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
    "PodMonitor": ("podMonitorSelector", "podMonitorNamespaceSelector"),
}
# kubernetes pkg/controlplane/controller/kubernetesservice: the Service the API server keeps
API_SERVER_SERVICE = ("default", {"component": "apiserver", "provider": "kubernetes"}, ("https",))
# prometheus-operator pkg/kubelet: the Service it keeps with each node's kubelet as an endpoint
KUBELET_SERVICE_ARG = "--kubelet-service="
KUBELET_LABELS = {"k8s-app": "kubelet", "app.kubernetes.io/name": "kubelet",
                  "app.kubernetes.io/managed-by": "prometheus-operator"}  # fmt: skip
KUBELET_PORTS = ("https-metrics", "http-metrics", "cadvisor")
# CloudNativePG's instance pods of a Cluster (its Monitoring docs: the exporter on 9187, `metrics`)
CNPG_PORTS = ("postgresql", "metrics", "status")


@dataclass(frozen=True)
class Target:
    """A Service or a pod template a monitor may select: its labels and its port names."""

    what: str
    namespace: str
    labels: Mapping[str, str]
    ports: frozenset[str]


def _services(objects: list[Document]) -> list[Target]:
    found = [
        Target(f"Service {d.name}", d.namespace, dig(d.body, "metadata", "labels") or {},
               _names(dig(d.body, "spec", "ports") or []))
        for d in objects
        if d.kind == "Service" and d.group == ""
    ]  # fmt: skip
    namespace, labels, ports = API_SERVER_SERVICE
    found.append(Target("the API server's Service kubernetes", namespace, labels, frozenset(ports)))
    for doc in objects:
        for arg in _args(doc):
            if arg.startswith(KUBELET_SERVICE_ARG):
                where, _, name = arg.removeprefix(KUBELET_SERVICE_ARG).partition("/")
                what = f"the kubelets' Service {name}, which {doc.ref} keeps"
                found.append(Target(what, where, KUBELET_LABELS, frozenset(KUBELET_PORTS)))
    return found


def _names(ports: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(p.get("name", "") for p in ports)


def _args(doc: Document) -> Iterator[str]:
    template = pod_template(doc.body)
    if template is None:
        return
    for container in template.spec.get("containers") or []:
        yield from (a for a in container.get("args") or [] if isinstance(a, str))


def _pods(objects: list[Document]) -> list[Target]:
    found = []
    for doc in objects:
        if (doc.group, doc.kind) == CNPG_CLUSTER:
            labels = {"cnpg.io/cluster": doc.name}
            found.append(Target(f"the instances of {doc.ref}", doc.namespace, labels, frozenset(CNPG_PORTS)))
        template = pod_template(doc.body)
        if template is None:
            continue
        containers = [*template.spec.get("containers", []), *template.spec.get("initContainers", [])]
        ports = _names(p for c in containers for p in c.get("ports") or [])
        found.append(
            Target(f"{doc.kind} {doc.name}", doc.namespace, template.metadata.get("labels") or {}, ports)
        )
    return found


def _namespaces(monitor: Document) -> set[str] | None:
    """The namespaces a monitor looks in (None: every one)."""
    selector = monitor.body["spec"].get("namespaceSelector") or {}
    if selector.get("any"):
        return None
    return set(selector.get("matchNames") or [monitor.namespace])


def _read_by(monitor: Document, prometheus: Document, namespace_labels: Mapping[str, Any]) -> bool:
    """Whether a Prometheus reads the monitor: a selector unset selects no monitor, a namespace
    selector unset only the Prometheus's own namespace."""
    spec = prometheus.body.get("spec") or {}
    chosen, namespaces = SELECTORS[monitor.kind]
    if spec.get(chosen) is None or not label_selector_matches(
        spec[chosen], monitor.body["metadata"].get("labels") or {}
    ):
        return False
    if spec.get(namespaces) is None:
        return monitor.namespace == prometheus.namespace
    labels = namespace_labels.get(monitor.namespace) or {"kubernetes.io/metadata.name": monitor.namespace}
    return label_selector_matches(spec[namespaces], labels)


def _endpoint_ports(monitor: Document) -> list[str]:
    endpoints = "endpoints" if monitor.kind == "ServiceMonitor" else "podMetricsEndpoints"
    return [e["port"] for e in monitor.body["spec"].get(endpoints) or [] if isinstance(e.get("port"), str)]


def _target_problem(monitor: Document, targets: list[Target]) -> str | None:
    where = _namespaces(monitor)
    selector = monitor.body["spec"].get("selector") or {}
    selected = [
        t for t in targets
        if (where is None or t.namespace in where) and label_selector_matches(selector, t.labels)
    ]  # fmt: skip
    what = "Service" if monitor.kind == "ServiceMonitor" else "pod"
    if not selected:
        places = "any namespace" if where is None else ", ".join(sorted(where))
        return f"selects no {what} in {places}: Prometheus gets no target from it"
    for port in _endpoint_ports(monitor):
        if not any(port in t.ports for t in selected):
            have = "; ".join(f"{t.what}: {', '.join(sorted(t.ports)) or 'none'}" for t in selected)
            return f"no {what} it selects has a port named {port} ({have}): Prometheus gets no target from it"
    return None


@rule(
    "MON-001",
    "scrape-targets",
    "a monitor that no Prometheus reads, or that finds no Service or pod with the port it names, keeps no "
    "target and says nothing: every alert and panel on its series is blind",
)
def _scrape_targets(ctx: Context) -> Iterator[Violation]:
    for _, objects in sorted(ctx.cluster_objects.items()):
        monitors = [d for d in objects if d.group == MONITORING and d.kind in SELECTORS]
        if not monitors:
            continue
        servers = [d for d in objects if d.group == MONITORING and d.kind in PROMETHEUS_KINDS]
        namespace_labels = {
            d.name: {**(dig(d.body, "metadata", "labels") or {}), "kubernetes.io/metadata.name": d.name}
            for d in objects
            if d.kind == "Namespace"
        }
        targets = {"ServiceMonitor": _services(objects), "PodMonitor": _pods(objects)}
        for monitor in monitors:
            if not any(_read_by(monitor, p, namespace_labels) for p in servers):
                yield Violation(monitor, "$.metadata.labels", "no Prometheus of the cluster selects it")
                continue
            problem = _target_problem(monitor, targets[monitor.kind])
            if problem is not None:
                yield Violation(monitor, "$.spec", problem)
