"""config/network.yaml: the management and 100GbE Kubernetes planes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt

from sitegen.model.fields import Cidr, Strict


class Plane(Strict):
    vlan: Annotated[int, Field(ge=1, le=4094)]
    cidr: Cidr


class KubernetesPlane(Plane):
    interface: str
    link_gbps: PositiveInt
    mtu: Annotated[int, Field(ge=1280, le=9216)]
    # Network policy: `audit` has Cilium log what the default-deny policies would drop (Hubble verdict
    # AUDIT) without dropping it; `enforce` drops it. Audit until the flows were seen complete.
    network_policy: Literal["audit", "enforce"] = "audit"


class Management(Strict):
    bmc: Plane
    os: Plane


class Network(Strict):
    management: Management
    kubernetes: KubernetesPlane
