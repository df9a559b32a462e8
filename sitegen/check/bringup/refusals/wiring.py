"""The Service port a webhook or an APIService calls, and whether its pods serve it (Kubernetes v1.35).

A ValidatingWebhookConfiguration's or MutatingWebhookConfiguration's `clientConfig.service` and an
APIService's `spec.service` name a Service port (`port`, 443 when left out). What answers there:

- The Service must have that port: the API server's ClusterIP resolver (apiserver pkg/util/proxy
  `ResolveCluster`: `no service port 443 found for service "x"`), the aggregator's availability
  controller (kube-aggregator pkg/controllers/status/remote: reason ServicePortError,
  `service/x in "ns" is not listening on port 443`).
- Its `targetPort` (the port itself when left out) must resolve on a running backend pod: the
  EndpointSlice controller's `FindPort` (pkg/api/v1/pod/util.go) looks a name up in the `ports` of
  the pod's containers and sidecars (init containers with restartPolicy Always), with the Service
  port's protocol; a name no container declares gives the pod no endpoint port, the slices have no
  address for the port (MissingEndpoints: `endpointslices for service/x in "ns" have no addresses
  with port name "p"`) and nothing answers the webhook or the APIService's discovery.
- A number is taken as is (`FindPort` does not check it): whether the container listens there is the
  application's, which the model cannot know. A number some backend container declares is served; one
  none declares is accepted and noted as an assumption (`ClusterObjects.assumed`).

admission.py's `service_ready` calls `unserved` for a webhook whose failurePolicy is Fail (the
API server refuses what it matches) and for an APIService's health (argo.py). Nothing here refuses
a create: the API server accepts a webhook or APIService whatever its Service (`ON_CREATE` and
`ON_POD` are empty).

Not modelled: headless (`clusterIP: None`) and ExternalName Services (none here calls one), a
webhook's `clientConfig.url`, the Service's own readiness gating (a backend counts once it runs:
kubelet.py judges readiness), and whether the backend answers TLS with the CA the caller trusts
(admission.py's cert-manager injection).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sitegen.check.bringup.kube import PodTemplate
from sitegen.check.bringup.refusals.kubelet import running_containers
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.tree.fields import dig

DEFAULT_PORT = 443  # admissionregistration/v1 ServiceReference and apiregistration/v1 defaults


def service_port(service: Mapping[str, Any], port: int) -> Mapping[str, Any] | None:
    """The Service's port numbered `port`, or None."""
    for entry in dig(service, "spec", "ports") or []:
        if int(entry.get("port", 0)) == port:
            return entry
    return None


def declared(templates: Iterable[PodTemplate], protocol: str) -> list[tuple[str | None, int]]:
    """(name, containerPort) of every port the backends' containers declare with this protocol."""
    return [
        (port.get("name"), int(port["containerPort"]))
        for t in templates
        for c in running_containers(t.spec)
        for port in c.get("ports") or []
        if str(port.get("protocol", "TCP")) == protocol
    ]


def unserved(
    service: Mapping[str, Any], port: int, backends: list[PodTemplate]
) -> tuple[str | None, str | None]:
    """(why nothing answers on the Service's `port` although `backends` run, or None; the assumption
    taken, or None). `backends` are the running pod templates its selector matches."""
    meta = service.get("metadata") or {}
    ns, name = meta.get("namespace", ""), meta["name"]
    entry = service_port(service, port)
    if entry is None:
        return f'service/{name} in "{ns}" is not listening on port {port}', None
    target = entry.get("targetPort", port)
    protocol = str(entry.get("protocol", "TCP"))
    ports = declared(backends, protocol)
    if isinstance(target, int) or str(target).isdigit():
        if int(target) in {number for _, number in ports}:
            return None, None
        return None, (
            f"Service {ns}/{name} targetPort {target}: no container of its pods declares it; taken as "
            "listening (the EndpointSlice controller does not check a number)"
        )
    if any(port_name == target for port_name, _ in ports):
        return None, None
    return (
        f'endpointslices for service/{name} in "{ns}" have no addresses with port name '
        f'"{entry.get("name", "")}": targetPort "{target}" is no {protocol} port of its pods\' containers',
        None,
    )


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = ()
