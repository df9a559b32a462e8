"""Before you start: the names the site resolves, and what its outside systems need."""

from __future__ import annotations

from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import Runbook


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
    names.append(
        (
            site.storage.aistor.s3_hostname,
            "the `minio` Service's load-balancer address (set once AIStor runs)",
        )
    )
    return names


def _outside(apps: VariantApps) -> list[str]:
    extras = []
    if any(c.name == CsiIsilon.name for ctx in apps.contexts for c in ctx.components):
        extras.append(
            "- PowerScale: the SmartQuotas licence (csi-isilon enforces each volume's size as a quota); "
            "SnapshotIQ too once a VolumeSnapshotClass for csi-isilon is added (none is generated)."
        )
    if apps.site.fabric.nics:
        extras.append(
            "- The NDR fabric's subnet manager (UFM or opensm) runs on every rail before the fabric "
            "preflight: an InfiniBand port without one stays down."
        )
    return extras
