"""Fabric rules: the NDR rails are one network for every cluster of a variant."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


@rule(
    "FAB-001",
    "rail-ranges-disjoint",
    "two clusters on one fabric handing out the same IPoIB addresses break both clusters' rails",
)
def _rail_ranges_disjoint(ctx: Context) -> Iterator[Violation]:
    seen: dict[str, list[tuple[ipaddress.IPv4Network, Document]]] = {}
    for doc in ctx.docs:
        if doc.group != "nv-ipam.nvidia.com" or doc.kind != "IPPool" or doc.cluster is None:
            continue
        subnet = ipaddress.ip_network(str(dig(doc.body, "spec", "subnet")), strict=False)
        for other_subnet, other in seen.setdefault(doc.variant, []):
            if other.cluster != doc.cluster and subnet.overlaps(other_subnet):
                yield Violation(
                    doc,
                    "$.spec.subnet",
                    f"{subnet} overlaps {other_subnet} of cluster {other.cluster} ({other.file})",
                )
        seen[doc.variant].append((subnet, doc))
