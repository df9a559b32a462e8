"""Before you start: the names the site resolves, and what its outside systems need."""

from __future__ import annotations

from constructs.s3_front_doors import front_door_addresses
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.compose.apps import VariantApps
from sitegen.tree.runbook import Runbook


def before_you_start(book: Runbook, apps: VariantApps) -> None:
    book.part("Before you start")
    book.write("These names resolve in the site's DNS:\n")
    book.write(*(f"- `{name}` -> {target}" for name, target in _names(apps)))
    extras = _outside(apps)
    if extras:
        book.write("", "Outside the clusters:\n", *extras)
    book.write("")


def _names(apps: VariantApps) -> list[tuple[str, str]]:
    site = apps.site
    gateway = site.services.gateway.address
    names = [
        (c.spec.api.dns_name, f"{c.spec.api.vip} (cluster {c.name}'s API VIP)") for c in apps.layout.clusters
    ]
    names += [
        (host, f"{gateway} (the Gateway)")
        for host in sorted(
            {
                site.gitops.argocd.hostname,
                site.services.monitoring.grafana_hostname,
                site.services.monitoring.telemetry_hostname,
                site.services.registry.hostname,
            }
        )
    ]
    home = next(c for c in apps.layout.clusters if site.storage.aistor.pool in {p.name for p in c.pools})
    doors = AIStor.front_door_hosts(apps.context(home))
    if doors:
        addresses = front_door_addresses(home.spec.load_balancer_cidr, doors)
        first, last = min(addresses.values()), max(addresses.values())
        s3 = (
            f"{first} ... {last}, one A record per storage server ({doors[0]} ... {doors[-1]}, in that order; "
            "round robin): each server serves S3 on its own address"
        )
    else:
        s3 = "the `minio` Service's load-balancer address (set once AIStor runs)"
    names.append((site.storage.aistor.s3_hostname, s3))
    return names


def _outside(apps: VariantApps) -> list[str]:
    extras = []
    if any(ctx.has(CsiIsilon) for ctx in apps.contexts):
        extras.append(
            "- PowerScale: the SmartQuotas licence (csi-isilon enforces each volume's size as a quota) and "
            "SnapshotIQ (the tenants' nightly backups take CSI snapshots of their volumes)."
        )
    if apps.site.services.backups.second.s3 == "powerscale":
        extras.append(
            "- PowerScale's S3 service on in the access zone, HTTPS only, OneFS 9.14 or later (lifecycle "
            "rules): the second backup target."
        )
    if apps.site.fabric.nics:
        extras.append(
            "- The NDR fabric's subnet manager (UFM or opensm) runs on every rail before the fabric "
            "preflight: an InfiniBand port without one stays down."
        )
    return extras
