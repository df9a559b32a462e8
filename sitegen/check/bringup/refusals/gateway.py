"""Gateway API objects the controller does not accept. The API server takes every GatewayClass, Gateway
and route (their CRDs' schemas and CEL rules aside: validation.py); what fails is the controller's
status, which Argo CD v3.4.7's built-in checks of Gateway, HTTPRoute and GRPCRoute read (their Lua,
vendored in vendor/argocd/health/, run by health.py). Argo CD v3.4.7 has no check of GatewayClass,
TLSRoute, TCPRoute, UDPRoute or BackendTLSPolicy: Healthy once applied, whatever their status.

The status is Envoy Gateway v1.9.0's (internal/provider/kubernetes/controller.go,
internal/gatewayapi/{route,validate,listener}.go, status/{gateway,gatewayclass}.go) over Gateway API
v1.6.1's conditions, written once the controller runs (the app of the ConfigMap that holds its
`envoy-gateway.yaml`, whose `gateway.controllerName` it manages):
- GatewayClass of its controllerName: Accepted, unless its parametersRef names no EnvoyProxy there
  (`Invalid parametersRef: ...`; its Gateways are then not processed). Another controllerName: no
  controller writes anything, nor to its Gateways and their routes.
- Gateway of an accepted class: per listener ResolvedRefs (a TLS certificateRef Secret that is not
  there: `certificate refs 0: Secret ns/name does not exist.`), Accepted, Programmed; the Gateway's
  Accepted from its listeners, and Programmed once the envoy Service has an address (Cilium's LB IPAM).
- A route, per parentRef to a managed Gateway (a parentRef to anything else gets no status):
  `NoMatchingParent` (no listener by sectionName/port), `NotAllowedByListeners` (the listener's
  allowedRoutes namespaces, Same/All/Selector, and kinds: given, or by protocol), then
  `NoMatchingListenerHostname` (no hostname intersection), and ResolvedRefs of its backendRefs
  (Service there and its port; another namespace needs a ReferenceGrant).

Not modelled: the envoy proxy fleet Envoy Gateway deploys (its pods' scheduling: Programmed counts it
available), ListenerSets, Backend and ServiceImport backends, filters' references, policies
(SecurityPolicy, BackendTLSPolicy: their status has no check in Argo CD v3.4.7), listener conflicts,
observedGeneration (the objects carry no generation, so Argo CD's checks take every condition).
Nothing here refuses a create or a pod (`ON_CREATE`, `ON_POD` stay empty); operators.py asks
`status_of` and `behind` for the status and the reason behind it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol

import yaml

from sitegen.check.bringup.objects import Applied, Key
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.check.labels import label_selector_matches
from sitegen.tree.fields import dig

GROUP = "gateway.networking.k8s.io"
DEFAULT_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"  # EnvoyGateway's default
CONFIG_KEY = "envoy-gateway.yaml"
# the route kinds a listener of a protocol takes when allowedRoutes.kinds is empty (listener.go)
KINDS_BY_PROTOCOL = {
    "HTTP": ("HTTPRoute", "GRPCRoute"),
    "HTTPS": ("HTTPRoute", "GRPCRoute"),
    "TLS": ("TLSRoute",),
    "TCP": ("TCPRoute",),
    "UDP": ("UDPRoute",),
}
ROUTES = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute")


class GatewayView(Protocol):
    """What of a cluster the controller reads (cluster.py's Cluster has it all)."""

    def find(self, kind: str, namespace: str, name: str) -> Applied | None: ...
    def of_kind(self, *kinds: str) -> list[tuple[Key, Applied]]: ...
    def app_running(self, owner: str | None) -> bool: ...
    def namespace_labels(self, name: str) -> dict[str, str]: ...
    def secret_blocker(self, namespace: str, name: str) -> str | None: ...
    def load_balancer_blocker(self) -> str | None: ...


def _cond(kind: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if ok else "False", "reason": reason, "message": message}


@cache
def configured_controller(config: str) -> str:
    """The controllerName an EnvoyGateway configuration manages."""
    gateway = dig(yaml.safe_load(config), "gateway") or {}
    return str(gateway.get("controllerName") or DEFAULT_CONTROLLER)


def controllers(cluster: GatewayView) -> dict[str, str]:
    """The running Envoy Gateways: controllerName -> the app that ships it."""
    found = {}
    for _, applied in cluster.of_kind("ConfigMap"):
        config = dig(applied.body, "data", CONFIG_KEY)
        if config is not None and cluster.app_running(applied.owner):
            found[configured_controller(config)] = applied.owner
    return found


def class_problem(gc: Mapping[str, Any], cluster: GatewayView) -> str | None:
    """Why the controller does not accept the GatewayClass (None: it does)."""
    spec, name = gc.get("spec") or {}, gc["metadata"]["name"]
    running = controllers(cluster)
    if spec.get("controllerName") not in running:
        names = ", ".join(f"{c} ({app})" for c, app in sorted(running.items())) or "none"
        return f"no running controller named {spec.get('controllerName')} (running Envoy Gateways: {names})"
    ref = spec.get("parametersRef")
    if ref:
        if (ref.get("group"), ref.get("kind")) != ("gateway.envoyproxy.io", "EnvoyProxy"):
            return f"Invalid parametersRef: unsupported parametersRef(invalid group or kind) for gatewayclass {name}"
        ns = ref.get("namespace") or "default"
        if cluster.find("EnvoyProxy", ns, ref.get("name", "")) is None:
            return (
                f"Invalid parametersRef: failed to find envoyproxy {ns}/{ref.get('name')} for GatewayClass "
                f'{name}: envoyproxies.gateway.envoyproxy.io "{ref.get("name")}" not found'
            )
    return None


def _managed_gateway(gw: Mapping[str, Any], cluster: GatewayView) -> str | None:
    """Why no controller processes the Gateway (None: Envoy Gateway does)."""
    name = dig(gw, "spec", "gatewayClassName", default="")
    gc = cluster.find("GatewayClass", "", name)
    if gc is None:
        return f"GatewayClass {name} does not exist"
    problem = class_problem(gc.body, cluster)
    return f"GatewayClass {name}: {problem}" if problem else None


def supported_kinds(listener: Mapping[str, Any]) -> tuple[str, ...]:
    valid = KINDS_BY_PROTOCOL.get(str(listener.get("protocol")), ())
    given = (dig(listener, "allowedRoutes", "kinds")) or []
    if not given:
        return valid
    return tuple(k["kind"] for k in given if k.get("group", GROUP) in (GROUP, "") and k.get("kind") in valid)


def _listener_status(listener: Mapping[str, Any], namespace: str, cluster: GatewayView) -> dict[str, Any]:
    conditions = []
    tls = listener.get("tls") or {}
    for i, ref in enumerate(
        tls.get("certificateRefs") or [] if tls.get("mode", "Terminate") == "Terminate" else []
    ):
        ns = ref.get("namespace") or namespace
        if ref.get("kind", "Secret") == "Secret" and cluster.secret_blocker(ns, ref["name"]) is not None:
            message = f"certificate refs {i}: Secret {ns}/{ref['name']} does not exist."
            conditions = [
                _cond("ResolvedRefs", False, "InvalidCertificateRef", message),
                _cond("Accepted", True, "Accepted", "Listener has been successfully translated"),
                _cond(
                    "Programmed", False, "Invalid", "Listener is invalid, see other Conditions for details."
                ),
            ]
            break
    if not conditions:
        conditions = [
            _cond(
                "Programmed",
                True,
                "Programmed",
                "Sending translated listener configuration to the data plane",
            ),
            _cond("Accepted", True, "Accepted", "Listener has been successfully translated"),
            _cond("ResolvedRefs", True, "ResolvedRefs", "Listener references have been resolved"),
        ]
    kinds = [{"group": GROUP, "kind": k} for k in supported_kinds(listener)]
    return {"name": listener.get("name"), "supportedKinds": kinds, "conditions": conditions}


def gateway_status(gw: Mapping[str, Any], cluster: GatewayView) -> dict[str, Any]:
    if _managed_gateway(gw, cluster) is not None:
        return {}
    ns = gw["metadata"]["namespace"]
    listeners = [_listener_status(li, ns, cluster) for li in dig(gw, "spec", "listeners") or []]
    no_address = cluster.load_balancer_blocker()
    programmed = (
        _cond("Programmed", False, "AddressNotAssigned", "No addresses have been assigned to the Gateway")
        if no_address
        else _cond("Programmed", True, "Programmed", "Address assigned to the Gateway")
    )
    accepted = _cond("Accepted", True, "Accepted", "The Gateway has been scheduled by Envoy Gateway")
    return {"conditions": [accepted, programmed], "listeners": listeners}


def _hostnames_intersect(route: list[str], listener: str | None) -> bool:
    """Gateway API hostname matching: a wildcard matches one or more labels on the left."""
    if not listener or not route:
        return True
    return any(
        r == listener or fnmatch.fnmatchcase(r, listener) or fnmatch.fnmatchcase(listener, r) for r in route
    )


def _allows(listener: Mapping[str, Any], gw_ns: str, route_ns: str, kind: str, cluster: GatewayView) -> bool:
    """The listener's allowedRoutes admit a route of this kind from this namespace."""
    namespaces = dig(listener, "allowedRoutes", "namespaces") or {}
    origin = namespaces.get("from", "Same")
    if origin == "All":
        allowed = True
    elif origin == "Selector":
        allowed = label_selector_matches(namespaces.get("selector") or {}, cluster.namespace_labels(route_ns))
    else:
        allowed = route_ns == gw_ns
    return allowed and kind in supported_kinds(listener)


def _parent_conditions(
    route: Mapping[str, Any], gw: Mapping[str, Any], ref: Mapping[str, Any], cluster: GatewayView
) -> list[dict[str, str]]:
    kind, ns = str(route["kind"]), route["metadata"]["namespace"]
    chosen = [
        li for li in dig(gw, "spec", "listeners") or []
        if ref.get("sectionName") in (None, li.get("name")) and ref.get("port") in (None, li.get("port"))
    ]  # fmt: skip
    if not chosen:
        return [_cond("Accepted", False, "NoMatchingParent", "No listeners match this parent ref")]
    allowed = [li for li in chosen if _allows(li, gw["metadata"]["namespace"], ns, kind, cluster)]
    if not allowed:
        message = "No listeners included by this parent ref allowed this attachment."
        return [_cond("Accepted", False, "NotAllowedByListeners", message)]
    resolved = _backend_problem(route, cluster)
    conditions = [
        _cond("ResolvedRefs", False, resolved[0], resolved[1])
        if resolved
        else _cond("ResolvedRefs", True, "ResolvedRefs", "Resolved all the Object references for the Route")
    ]
    hostnames = list(dig(route, "spec", "hostnames") or [])
    if kind in ("HTTPRoute", "GRPCRoute", "TLSRoute") and not any(
        _hostnames_intersect(hostnames, li.get("hostname")) for li in allowed
    ):
        message = (
            f"There were no hostname intersections between the {kind} and this parent ref's Listener(s)."
        )
        return [_cond("Accepted", False, "NoMatchingListenerHostname", message), *conditions]
    return [_cond("Accepted", True, "Accepted", "Route is accepted"), *conditions]


def _backend_problem(route: Mapping[str, Any], cluster: GatewayView) -> tuple[str, str] | None:
    """The first backendRef that does not resolve: (reason, message), as Envoy Gateway words them."""
    ns = route["metadata"]["namespace"]
    protocol = "UDP" if route["kind"] == "UDPRoute" else "TCP"
    for r, rule in enumerate(dig(route, "spec", "rules") or []):
        for b, ref in enumerate(rule.get("backendRefs") or []):
            if (ref.get("group", ""), ref.get("kind", "Service")) != ("", "Service"):
                continue  # Backend, ServiceImport: not modelled
            where = f"failed to process route rule {r} backendRef {b}: "
            target_ns = ref.get("namespace") or ns
            if target_ns != ns and not _granted(route, target_ns, ref["name"], cluster):
                message = (
                    f"Backend ref to Service {target_ns}/{ref['name']} not permitted by any ReferenceGrant."
                )
                return "RefNotPermitted", where + message
            if ref.get("port") is None:
                message = "A valid port number corresponding to a port on the Service must be specified"
                return "PortNotSpecified", where + message
            service = cluster.find("Service", target_ns, ref["name"])
            if service is None:
                return "BackendNotFound", where + f"service {target_ns}/{ref['name']} not found"
            ports = dig(service.body, "spec", "ports") or []
            if not any(p.get("port") == ref["port"] and p.get("protocol", "TCP") == protocol for p in ports):
                message = f"{protocol} Port {ref['port']} not found on Service {target_ns}/{ref['name']}"
                return "PortNotFound", where + message
    return None


def _granted(route: Mapping[str, Any], namespace: str, name: str, cluster: GatewayView) -> bool:
    """A ReferenceGrant in the Service's namespace lets routes of this kind from the route's namespace."""
    for key, grant in cluster.of_kind("ReferenceGrant"):
        spec = grant.body.get("spec") or {}
        if key[2] != namespace:
            continue
        froms = any(
            f.get("group") == GROUP
            and f.get("kind") == route["kind"]
            and f.get("namespace") == route["metadata"]["namespace"]
            for f in spec.get("from") or []
        )
        tos = any(
            t.get("group", "") == "" and t.get("kind") == "Service" and t.get("name") in (None, name)
            for t in spec.get("to") or []
        )
        if froms and tos:
            return True
    return False


def _parents(
    route: Mapping[str, Any], cluster: GatewayView
) -> list[tuple[Mapping[str, Any], Applied | None]]:
    """Each parentRef to a Gateway with the Gateway it names (None: not there)."""
    ns = route["metadata"]["namespace"]
    return [
        (ref, cluster.find("Gateway", ref.get("namespace") or ns, ref.get("name", "")))
        for ref in dig(route, "spec", "parentRefs") or []
        if (ref.get("group", GROUP), ref.get("kind", "Gateway")) == (GROUP, "Gateway")
    ]


def route_status(route: Mapping[str, Any], cluster: GatewayView) -> dict[str, Any]:
    """The parents Envoy Gateway writes: only those that name a Gateway it manages."""
    found = []
    for ref, gw in _parents(route, cluster):
        if gw is None or _managed_gateway(gw.body, cluster) is not None:
            continue
        gc = cluster.find("GatewayClass", "", gw.body["spec"]["gatewayClassName"])
        controller = (gc.body["spec"] if gc else {}).get("controllerName")
        conditions = _parent_conditions(route, gw.body, ref, cluster)
        found.append({"parentRef": dict(ref), "controllerName": controller, "conditions": conditions})
    return {"parents": found} if found else {}


def status_of(body: Mapping[str, Any], cluster: GatewayView) -> dict[str, Any]:
    """The status Envoy Gateway has written into a Gateway API object by now ({}: none)."""
    kind = body.get("kind")
    if kind == "GatewayClass":
        problem = class_problem(body, cluster)
        if problem is not None and problem.startswith("no running controller"):
            return {}
        if problem is not None:
            return {"conditions": [_cond("Accepted", False, "InvalidParameters", problem)]}
        return {"conditions": [_cond("Accepted", True, "Accepted", "Valid GatewayClass")]}
    if kind == "Gateway":
        return gateway_status(body, cluster)
    if kind in ROUTES:
        return route_status(body, cluster)
    return {}


def behind(body: Mapping[str, Any], cluster: GatewayView) -> str | None:
    """Why the object has the status it has, where the status does not say (for the blocker)."""
    kind = body.get("kind")
    if kind == "Gateway":
        unmanaged = _managed_gateway(body, cluster)
        return f"no controller processes it: {unmanaged}" if unmanaged else cluster.load_balancer_blocker()
    if kind not in ROUTES or route_status(body, cluster):
        return None
    for ref, gw in _parents(body, cluster):
        where = f"{ref.get('namespace') or body['metadata']['namespace']}/{ref.get('name')}"
        if gw is None:
            return f"its parent Gateway {where} does not exist"
        unmanaged = _managed_gateway(gw.body, cluster)
        if unmanaged:
            return f"no controller processes its parent Gateway {where}: {unmanaged}"
    return "it names no parent Gateway"


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = ()
