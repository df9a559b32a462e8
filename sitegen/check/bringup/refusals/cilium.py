"""Where Cilium's agents reach the API server. With kube-proxy replacement nothing serves the
`kubernetes` Service's ClusterIP before the agent itself runs, so the Helm values' `k8sServiceHost` /
`k8sServicePort` are rendered as the agents' (and operator's, and envoy's) `KUBERNETES_SERVICE_HOST` /
`KUBERNETES_SERVICE_PORT` env (cilium 1.19 chart, templates/cilium-agent/daemonset.yaml), which
client-go's in-cluster configuration dials. That address must be one the API server is served at: the
kubeadm ClusterConfiguration's `controlPlaneEndpoint`, the VIP kube-vip holds on a control-plane host
(its static Pod's `address`), or a control-plane host's `localAPIEndpoint.advertiseAddress`, on the
API server's bind port; and a name its serving certificate holds (kubeadm puts the advertise
addresses, the endpoint's host and `apiServer.certSANs` in it), or TLS verification fails. Otherwise
the agent never initializes its Kubernetes client: it is never Ready, and no node turns Ready.

Any workload that sets `KUBERNETES_SERVICE_HOST` itself is judged the same way (client-go reads it).
Not modelled: DNS beyond the controlPlaneEndpoint's name (another name is taken as not resolving to the
API server), the `kubernetes` Service's ClusterIP (reachable only through kube-proxy or Cilium itself),
certificates renewed with other names later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.tree.fields import dig

DEFAULT_BIND_PORT = 6443  # kubeadm's default localAPIEndpoint.bindPort
# the addresses (host, port) the API server is reached at, and the names its serving certificate holds
ApiServer = tuple[frozenset[tuple[str, int]], frozenset[str]]


def _host_port(endpoint: str, default: int) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    return (host, int(port)) if sep and port.isdigit() else (endpoint, default)


def api_server(docs: Iterable[Mapping[str, Any]]) -> ApiServer:
    """What the kubeadm folder of a cluster says about its API server: its ClusterConfiguration's
    controlPlaneEndpoint and certSANs, each control-plane host's advertise address and bind port (its
    Init- or JoinConfiguration's), and kube-vip's control-plane VIP (its static Pod's env)."""
    docs = list(docs)
    bind = DEFAULT_BIND_PORT
    advertised: set[tuple[str, int]] = set()
    for doc in docs:
        if doc.get("kind") == "InitConfiguration":
            local = doc.get("localAPIEndpoint") or {}
        else:  # a JoinConfiguration of a control-plane host (a worker's has no controlPlane)
            local = dig(doc, "controlPlane", "localAPIEndpoint") or {}
        if local.get("advertiseAddress"):
            port = int(local.get("bindPort", DEFAULT_BIND_PORT))
            advertised.add((str(local["advertiseAddress"]), port))
            bind = port
    addresses = set(advertised)
    names = {host for host, _ in advertised}
    for doc in docs:
        if doc.get("kind") == "ClusterConfiguration":
            names |= {str(n) for n in dig(doc, "apiServer", "certSANs") or []}
            if doc.get("controlPlaneEndpoint"):
                host, port = _host_port(str(doc["controlPlaneEndpoint"]), bind)
                addresses.add((host, port))
                names.add(host)
        if doc.get("kind") == "Pod" and dig(doc, "metadata", "name") == "kube-vip":
            for c in dig(doc, "spec", "containers") or []:
                env = {e.get("name"): str(e.get("value", "")) for e in c.get("env") or []}
                if env.get("address") and env.get("cp_enable", "false") == "true":
                    addresses.add((env["address"], bind))  # the VIP lands on a host the API server binds
    return frozenset(addresses), frozenset(names)


def _service_env(w: Workload) -> tuple[str, str, str] | None:
    """(container, host, port) of the first container that names the API server's address itself."""
    for c in w.template.containers():
        env = {e.get("name"): e.get("value") for e in c.get("env") or [] if "value" in e}
        if env.get("KUBERNETES_SERVICE_HOST"):
            return (
                str(c.get("name")),
                str(env["KUBERNETES_SERVICE_HOST"]),
                str(env.get("KUBERNETES_SERVICE_PORT", 443)),
            )
    return None


def unreachable_api_server(w: Workload, cluster: ClusterObjects) -> str | None:
    """A pod whose KUBERNETES_SERVICE_HOST/PORT is no address the API server is served at, or not a
    name its certificate holds: its client never connects (the agents never become Ready)."""
    addresses, names = cluster.api_server
    found = _service_env(w)
    if found is None or not addresses:
        return None
    container, host, port = found
    url = f"https://{host}:{port}"
    served = ", ".join(f"{h}:{p}" for h, p in sorted(addresses))
    if not port.isdigit() or (host, int(port)) not in addresses:
        return (
            f'{container}: Unable to contact k8s api-server: Get "{url}/version": dial tcp {host}:{port}: '
            f"i/o timeout (KUBERNETES_SERVICE_HOST/PORT, Helm's k8sServiceHost/k8sServicePort; the API "
            f"server is served at {served})"
        )
    if host not in names:
        return (
            f'{container}: Unable to contact k8s api-server: Get "{url}/version": tls: failed to verify '
            f"certificate: x509: certificate is valid for {', '.join(sorted(names))}, not {host}"
        )
    return None


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (unreachable_api_server,)
