"""Typed stand-ins for the kinds we render whose CRD no chart renders: their controllers register
them at run time (the Cilium operator its own, the NVIDIA IPAM controller, which the Network Operator
deploys, `IPPool`). `validate` needs no CRD folder for them; one given with `--crds` takes precedence.

Exactly the fields we render, with the upstream names and types (Cilium 1.20, nv-ipam of Network
Operator 26.4); metadata as ObjectMeta's name/namespace/labels/annotations.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, IPvAnyNetwork, StringConstraints


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Meta(_Doc):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class LabelRequirement(_Doc):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = []


class LabelSelector(_Doc):
    matchLabels: dict[str, str] = {}
    matchExpressions: list[LabelRequirement] = []


class L2AnnouncementSpec(_Doc):
    nodeSelector: LabelSelector | None = None
    serviceSelector: LabelSelector | None = None
    interfaces: list[str] = []
    externalIPs: bool = False
    loadBalancerIPs: bool = False


class CiliumL2AnnouncementPolicy(_Doc):
    """cilium.io/v2alpha1 (Cilium 1.20)."""

    apiVersion: Literal["cilium.io/v2alpha1"]
    kind: Literal["CiliumL2AnnouncementPolicy"]
    metadata: _Meta
    spec: L2AnnouncementSpec


class IPBlock(_Doc):
    cidr: str | None = None
    start: str | None = None
    stop: str | None = None


class LoadBalancerIPPoolSpec(_Doc):
    blocks: list[IPBlock]
    allowFirstLastIPs: Literal["Yes", "No"] | None = None
    disabled: bool = False
    serviceSelector: LabelSelector | None = None


class CiliumLoadBalancerIPPool(_Doc):
    """cilium.io/v2 (Cilium 1.20), cluster-scoped."""

    apiVersion: Literal["cilium.io/v2"]
    kind: Literal["CiliumLoadBalancerIPPool"]
    metadata: _Meta
    spec: LoadBalancerIPPoolSpec


class SelectorRequirement(_Doc):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = []


class SelectorTerm(_Doc):
    matchExpressions: list[SelectorRequirement] = []
    matchFields: list[SelectorRequirement] = []


class NodeSelector(_Doc):
    nodeSelectorTerms: list[SelectorTerm]


class IPPoolSpec(_Doc):
    subnet: str
    perNodeBlockSize: int
    gateway: str | None = None
    defaultGateway: bool | None = None
    nodeSelector: NodeSelector | None = None


class NvIpamIPPool(_Doc):
    """nv-ipam.nvidia.com/v1alpha1 IPPool (NVIDIA k8s IPAM), namespaced."""

    apiVersion: Literal["nv-ipam.nvidia.com/v1alpha1"]
    kind: Literal["IPPool"]
    metadata: _Meta
    spec: IPPoolSpec


class EndpointSelector(_Doc):
    matchLabels: dict[str, str] = {}
    matchExpressions: list[SelectorRequirement] = []


class PortProtocol(_Doc):
    port: str
    protocol: Literal["TCP", "UDP", "SCTP", "ANY"] = "ANY"


class FQDNSelector(_Doc):
    """pkg/policy/api/fqdn.go: a name, or a pattern with `*` (the characters the API allows)."""

    matchName: Annotated[str, StringConstraints(pattern=r"^[-a-zA-Z0-9_.]+$", max_length=255)] | None = None
    matchPattern: Annotated[str, StringConstraints(pattern=r"^[-a-zA-Z0-9_.*]+$", max_length=255)] | None = (
        None
    )


class L7Rules(_Doc):
    dns: list[FQDNSelector] | None = None  # the DNS proxy's rules (PortRuleDNS has FQDNSelector's fields)


class PortRule(_Doc):
    ports: list[PortProtocol]
    rules: L7Rules | None = None


Entity = Literal[
    "all", "world", "cluster", "host", "remote-node", "kube-apiserver", "health", "init", "ingress"
]


class IngressRule(_Doc):
    fromEndpoints: list[EndpointSelector] | None = None
    fromEntities: list[Entity] | None = None
    fromCIDR: list[IPvAnyNetwork] | None = None  # `format: cidr`
    toPorts: list[PortRule] | None = None


class EgressRule(_Doc):
    toEndpoints: list[EndpointSelector] | None = None
    toEntities: list[Entity] | None = None
    toCIDR: list[IPvAnyNetwork] | None = None  # `format: cidr`
    toFQDNs: list[FQDNSelector] | None = None
    toPorts: list[PortRule] | None = None


class NetworkPolicySpec(_Doc):
    endpointSelector: EndpointSelector
    ingress: list[IngressRule] = []
    egress: list[EgressRule] = []


class CiliumNetworkPolicy(_Doc):
    """cilium.io/v2 (Cilium 1.20), namespaced."""

    apiVersion: Literal["cilium.io/v2"]
    kind: Literal["CiliumNetworkPolicy"]
    metadata: _Meta
    spec: NetworkPolicySpec


STANDIN_MODELS: dict[tuple[str, str], type[_Doc]] = {
    ("cilium.io/v2", "CiliumNetworkPolicy"): CiliumNetworkPolicy,
    ("cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy"): CiliumL2AnnouncementPolicy,
    ("cilium.io/v2", "CiliumLoadBalancerIPPool"): CiliumLoadBalancerIPPool,
    ("nv-ipam.nvidia.com/v1alpha1", "IPPool"): NvIpamIPPool,
}
