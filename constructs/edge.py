"""Certificates and the Gateway: cert-manager's ClusterIssuer, Envoy Gateway's class, the site Gateway
with its certificate, and (apart: SiteRoutes) HTTPRoutes to the platform's web front ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct
from constructs.objects import PARTIAL_OBJECT, SKIP_DRY_RUN, api_object
from constructs.secrets import VaultSecret
from sitegen.model import Certificates, Placement

HTTPS_PORT = 443  # the Gateway's listeners of the front ends (port 80 only redirects to it)

GATEWAY_API = "gateway.networking.k8s.io/v1"
ISSUER = "site"
# A certificate of the site's CA: a new ECDSA key at every renewal
SITE_ISSUED = {
    "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": ISSUER},
    "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
}
# The issuing CA's key pair (tls.crt: it and the site CA above it; tls.key), cert-manager's on the hub
# only: an intermediate the site CA signs with name constraints (the RUNBOOK), so the root's key never
# enters a cluster and what the clusters can sign is limited to the site's names.
ISSUING_CA_VAULT_KEY = "pki/issuing-ca"
SITE_CA_KEY_PAIR = "pki/site-ca"  # where the root's pair was kept before: no cluster reads it
ISSUING_CA_SECRET = "issuing-ca"
ISSUING_CA_STEP = "The issuing CA"  # the RUNBOOK step that makes it and renews it
# The site CA's certificate alone, for the clusters that trust it: a Vault policy grants whole keys, so
# a cluster that may read a certificate from a key pair's key could read the private key too.
SITE_CA_CERT_VAULT_KEY = "pki/site-ca-cert"


def _object(
    scope: Construct, id: str, api_version: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any]
) -> None:
    annotations = {**metadata.get("annotations", {}), **SKIP_DRY_RUN}
    api_object(scope, id, api_version, kind, {**metadata, "annotations": annotations}, spec=spec)


class SiteIssuer(Construct):
    """The ClusterIssuer every certificate names; its kind is config (internal CA or ACME)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        certificates: Certificates,
        namespace: str,
        store: str,
        gateway: tuple[str, str],
    ) -> None:
        super().__init__(scope, id)
        if certificates.issuer == "internal-ca":
            # cert-manager reads a CA issuer's key pair from its own namespace
            VaultSecret(
                self,
                "CA",
                name=ISSUING_CA_SECRET,
                namespace=namespace,
                store=store,
                key=ISSUING_CA_VAULT_KEY,
                properties=["tls.crt", "tls.key"],
            )
            spec: dict[str, Any] = {"ca": {"secretName": ISSUING_CA_SECRET}}
        else:
            acme = certificates.acme
            assert acme is not None
            name, gw_namespace = gateway
            spec = {
                "acme": {
                    "server": acme.server,
                    "email": acme.email,
                    "privateKeySecretRef": {"name": "site-acme-account"},
                    "solvers": [
                        {
                            "http01": {
                                "gatewayHTTPRoute": {
                                    "parentRefs": [
                                        {"name": name, "namespace": gw_namespace, "kind": "Gateway"}
                                    ]
                                }
                            }
                        }
                    ],
                }
            }
        _object(self, "Resource", "cert-manager.io/v1", "ClusterIssuer", {"name": ISSUER}, spec)


@dataclass(frozen=True)
class Backend:
    service: str
    port: int
    path: str | None = None  # an exact path; None: every request of the host
    timeout: str | None = None  # request timeout; "0s" none (image pushes, model streams)
    # The backend serves HTTPS with the key pair of this Secret, which the Gateway has the site CA
    # issue for the Service's name and then verifies (TLS from the client to the pod). Only with the
    # internal CA: an ACME issuer cannot name a Service.
    tls_secret: str | None = None


@dataclass(frozen=True)
class Route:
    name: str
    namespace: str
    hostname: str
    backends: tuple[Backend, ...]
    # a Secret (`.htpasswd`) in the route's namespace: Envoy asks for basic authentication
    basic_auth: str | None = None
    # API keys (client id -> key) from the vault: Envoy admits a request only with one in `x-api-key`
    api_keys: ApiKeys | None = None


@dataclass(frozen=True)
class ApiKeys:
    secret: str  # written into the route's namespace
    vault_key: str  # every property of it is a client id and its key
    header: str = "x-api-key"


# set by the API server on every Namespace: a selector on it names exactly one namespace
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class SiteGateway(Construct):
    """One Gateway for the site's web front ends: TLS terminated with a cert-manager certificate, the
    Envoy data plane on the system pool, its address from the load-balancer pool."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        placement: Placement,
        address: str,
        routes: list[Route],
        cluster_domain: str,
        replicas: int = 2,
    ) -> None:
        super().__init__(scope, id)
        name = "site"
        self._data_plane(name, namespace, placement=placement, address=address, replicas=replicas)
        hostnames = sorted(r.hostname for r in routes)
        _object(
            self,
            "Certificate",
            "cert-manager.io/v1",
            "Certificate",
            {"name": f"{name}-gateway", "namespace": namespace},
            {
                "secretName": f"{name}-gateway-tls",
                "dnsNames": hostnames,
                **SITE_ISSUED,
            },
        )
        _object(
            self,
            "Gateway",
            GATEWAY_API,
            "Gateway",
            {"name": name, "namespace": namespace},
            {"gatewayClassName": "envoy", "listeners": _listeners(name, routes)},
        )
        self._https_redirect(name, namespace)
        for route in routes:
            for backend in route.backends:
                if backend.tls_secret:
                    BackendTls(
                        self, f"Tls-{route.name}-{backend.service}", namespace=route.namespace,
                        backend=backend, cluster_domain=cluster_domain,
                    )  # fmt: skip

    def _data_plane(
        self, name: str, namespace: str, *, placement: Placement, address: str, replicas: int
    ) -> None:
        """The EnvoyProxy that places Envoy's pods and Service, and the GatewayClass that names it."""
        _object(
            self,
            "Proxy",
            "gateway.envoyproxy.io/v1alpha1",
            "EnvoyProxy",
            {"name": name, "namespace": namespace},
            {
                "provider": {
                    "type": "Kubernetes",
                    "kubernetes": {
                        "envoyDeployment": {
                            "replicas": replicas,
                            "pod": {
                                "nodeSelector": placement.node_selector,
                                "tolerations": list(placement.tolerations),
                            },
                        },
                        "envoyService": {
                            "type": "LoadBalancer",
                            "annotations": {"lbipam.cilium.io/ips": address},
                        },
                    },
                }
            },
        )
        _object(
            self,
            "Class",
            GATEWAY_API,
            "GatewayClass",
            {"name": "envoy"},
            {
                "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
                "parametersRef": {
                    "group": "gateway.envoyproxy.io",
                    "kind": "EnvoyProxy",
                    "name": name,
                    "namespace": namespace,
                },
            },
        )

    def _https_redirect(self, name: str, namespace: str) -> None:
        _object(
            self,
            "Redirect",
            GATEWAY_API,
            "HTTPRoute",
            {"name": f"{name}-https-redirect", "namespace": namespace},
            {
                "parentRefs": [{"name": name, "sectionName": "http"}],
                "rules": [
                    {
                        "filters": [
                            {
                                "type": "RequestRedirect",
                                "requestRedirect": {"scheme": "https", "statusCode": 301},
                            }
                        ]
                    }
                ],
            },
        )


def _listeners(gateway: str, routes: list[Route]) -> list[dict[str, Any]]:
    # One HTTPS listener per front end: its hostname, and routes only from the namespace that owns
    # it. A listener open to all namespaces without a hostname would let any tenant attach a route
    # for any name under the site certificate.
    return [
        *(
            {
                "name": f"https-{route.name}",
                "protocol": "HTTPS",
                "port": HTTPS_PORT,
                "hostname": route.hostname,
                "tls": {
                    "mode": "Terminate",
                    "certificateRefs": [{"kind": "Secret", "name": f"{gateway}-gateway-tls"}],
                },
                "allowedRoutes": {
                    "namespaces": {
                        "from": "Selector",
                        "selector": {"matchLabels": {NAMESPACE_NAME_LABEL: route.namespace}},
                    }
                },
            }
            for route in sorted(routes, key=lambda r: r.name)
        ),
        # plain HTTP only answers with a redirect (and carries ACME HTTP-01 challenges)
        {
            "name": "http",
            "protocol": "HTTP",
            "port": 80,
            "allowedRoutes": {"namespaces": {"from": "Same"}},
        },
    ]


class SiteRoutes(Construct):
    """The HTTPRoutes to the front ends and their SecurityPolicies (API keys, basic auth). Apart from the
    Gateway: Envoy Gateway reports a route whose backend Service is not there ResolvedRefs=False, which
    Argo CD's HTTPRoute check reads as Degraded, so the routes sync after the apps that serve them."""

    def __init__(
        self, scope: Construct, id: str, *, gateway: tuple[str, str], routes: list[Route], store: str
    ) -> None:
        super().__init__(scope, id)
        name, namespace = gateway
        for route in routes:
            _object(
                self,
                f"Route-{route.name}",
                GATEWAY_API,
                "HTTPRoute",
                {"name": route.name, "namespace": route.namespace},
                {
                    "parentRefs": [
                        {"name": name, "namespace": namespace, "sectionName": f"https-{route.name}"}
                    ],
                    "hostnames": [route.hostname],
                    "rules": [_rule(b) for b in route.backends],
                },
            )
            if route.api_keys:
                keys = route.api_keys
                VaultSecret(
                    self, f"Keys-{route.name}", name=keys.secret, namespace=route.namespace, store=store,
                    key=keys.vault_key, properties=None,
                )  # fmt: skip
                _object(
                    self,
                    f"KeyAuth-{route.name}",
                    "gateway.envoyproxy.io/v1alpha1",
                    "SecurityPolicy",
                    {"name": route.name, "namespace": route.namespace},
                    {
                        "targetRefs": [
                            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route.name}
                        ],
                        "apiKeyAuth": {
                            "credentialRefs": [{"name": keys.secret}],
                            "extractFrom": [{"headers": [keys.header]}],
                        },
                    },
                )
            if route.basic_auth:
                _object(
                    self,
                    f"Auth-{route.name}",
                    "gateway.envoyproxy.io/v1alpha1",
                    "SecurityPolicy",
                    {"name": route.name, "namespace": route.namespace},
                    {
                        "targetRefs": [
                            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route.name}
                        ],
                        "basicAuth": {"users": {"name": route.basic_auth}},
                    },
                )


class BackendTls(Construct):
    """The backend's serving certificate from the site CA, and the BackendTLSPolicy with which Envoy
    verifies it (SNI and name: the Service's; trust: the CA in the certificate's own Secret)."""

    def __init__(
        self, scope: Construct, id: str, *, namespace: str, backend: Backend, cluster_domain: str
    ) -> None:
        super().__init__(scope, id)
        assert backend.tls_secret is not None
        host = f"{backend.service}.{namespace}.svc"
        _object(
            self,
            "Certificate",
            "cert-manager.io/v1",
            "Certificate",
            {"name": backend.tls_secret, "namespace": namespace},
            {
                "secretName": backend.tls_secret,
                # the Service's qualified names only: a bare name is outside the issuing CA's name
                # constraints, and a client that checks them refuses the whole certificate
                "dnsNames": [host, f"{host}.{cluster_domain}"],
                **SITE_ISSUED,
            },
        )
        _object(
            self,
            "Policy",
            GATEWAY_API,
            "BackendTLSPolicy",
            {"name": backend.service, "namespace": namespace},
            {
                "targetRefs": [{"group": "", "kind": "Service", "name": backend.service}],
                # Envoy Gateway reads `ca.crt` of a Secret too (cert-manager's CA issuer writes it)
                "validation": {
                    "caCertificateRefs": [{"group": "", "kind": "Secret", "name": backend.tls_secret}],
                    "hostname": host,
                },
            },
        )


def _rule(backend: Backend) -> dict[str, Any]:
    rule: dict[str, Any] = {"backendRefs": [{"name": backend.service, "port": backend.port}]}
    if backend.path:
        rule["matches"] = [{"path": {"type": "Exact", "value": backend.path}}]
    if backend.timeout:
        rule["timeouts"] = {"request": backend.timeout}
    return rule


class CoreDnsPlacement(Construct):
    """kubeadm owns CoreDNS; this partial Deployment, applied server-side, only adds the infra selector.

    Argo CD owns exactly these fields, kubeadm the rest; selfHeal re-applies them after `kubeadm upgrade`.
    """

    def __init__(self, scope: Construct, id: str, *, placement: Placement) -> None:
        super().__init__(scope, id)
        labels = {"k8s-app": "kube-dns"}
        api_object(
            self,
            "Resource",
            "apps/v1",
            "Deployment",
            {
                "name": "coredns",
                "namespace": "kube-system",
                "annotations": {
                    **PARTIAL_OBJECT,
                    "sitegen.io/partial": "true",
                },
            },
            spec={
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": placement.node_selector,
                        # only where the system pool is tainted (a control plane): an empty list
                        # would take kubeadm's own tolerations away
                        **({"tolerations": list(placement.tolerations)} if placement.tolerations else {}),
                        "containers": [{"name": "coredns"}],
                    },
                },
            },
        )
