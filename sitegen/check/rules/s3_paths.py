"""The rule over how S3 reaches AIStor from another cluster: at the servers' own ports, not through
one node's."""

from __future__ import annotations

from collections.abc import Iterator

from constructs.s3_front_doors import HOSTNAME
from sitegen.check.bringup.kube import label_selector_matches
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


def _announcing_hosts(policy: Document) -> set[str] | None:
    """The hosts a policy pins its addresses to, or None when it selects nodes otherwise."""
    selector = policy.body["spec"].get("nodeSelector") or {}
    hosts = [
        r for r in selector.get("matchExpressions") or [] if r["key"] == HOSTNAME and r["operator"] == "In"
    ]
    return set(hosts[0]["values"]) if hosts and not selector.get("matchLabels") else None


@rule(
    "S3-001",
    "s3-at-server-speed",
    "a cluster that reaches AIStor from outside through one load-balancer address sends all of S3 "
    "through one node's ports: every storage server needs an address it serves itself",
)
def _s3_spread(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    tier = ctx.site.storage.aistor
    for variant, layout in sorted(ctx.layouts.items()):
        if len(layout.clusters) == 1:
            continue
        home = next((c for c in layout.clusters if any(p.name == tier.pool for p in c.pools)), None)
        if home is None:
            continue
        docs = [d for d in ctx.docs if d.variant == variant and d.cluster == home.name and not d.is_values]
        stores = [d for d in docs if d.kind == "ObjectStore"]
        if not stores:
            continue
        pod_labels = {
            k: v
            for p in stores[0].body["spec"].get("pools") or []
            for k, v in (p.get("labels") or {}).items()
        }
        policies = [d for d in docs if d.kind == "CiliumL2AnnouncementPolicy"]
        served: set[str] = set()
        doors = 0
        for service in docs:
            spec = service.body.get("spec") or {}
            if service.kind != "Service" or spec.get("type") != "LoadBalancer" or not spec.get("selector"):
                continue
            if (
                not label_selector_matches({"matchLabels": spec["selector"]}, pod_labels)
                or spec.get("externalTrafficPolicy") != "Local"
            ):
                continue
            labels = dig(service.body, "metadata", "labels") or {}
            pinned = [
                hosts for policy in policies
                if (hosts := _announcing_hosts(policy))
                and label_selector_matches(policy.body["spec"].get("serviceSelector") or {}, labels)
            ]  # fmt: skip
            if pinned:
                doors += 1
                served |= set().union(*pinned)
        expected = {h.name for h in home.pool(tier.pool).hosts}
        if doors < len(expected) or not expected <= served:
            yield Violation(stores[0], "$.spec.pools", f"S3 from the other clusters of {variant} enters on "
                            f"{doors} address(es) for {len(expected)} storage servers: a LoadBalancer Service "
                            "with externalTrafficPolicy Local per server, announced by that server")  # fmt: skip
