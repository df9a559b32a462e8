"""Typed stand-ins for the kinds we render whose CRD is not among the CRD folders `validate` reads.

Exactly the fields we render, with the upstream names; metadata as ObjectMeta's name/labels/annotations.
Replace a stand-in by the real CRD as soon as one is available (Cilium registers this one at run time).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Meta(_Doc):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class LabelSelector(_Doc):
    matchLabels: dict[str, str] = {}


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


STANDIN_MODELS: dict[tuple[str, str], type[_Doc]] = {
    ("cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy"): CiliumL2AnnouncementPolicy,
}
