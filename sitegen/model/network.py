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
    # Network policy: `enforce` drops what the default-deny policies do not allow (the flows every
    # component declares, bring-up's included). `audit` only logs it (Hubble verdict AUDIT) and leaves
    # every namespace open: an explicit, temporary opt-in, alerted on while it lasts.
    network_policy: Literal["audit", "enforce"] = "enforce"


class Management(Strict):
    bmc: Plane
    os: Plane


class Network(Strict):
    management: Management
    kubernetes: KubernetesPlane
