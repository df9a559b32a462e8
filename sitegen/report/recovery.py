"""What the site can get back, per class of data: each copy's place, its recovery point (the longest
gap between two runs of its schedule, from the cron) and how long it is kept; and what has no copy,
with the reason. `plan` shows it; the schedules are services.backups of config."""

from __future__ import annotations

from dataclasses import dataclass

from sitegen.components.storage.velero import Velero
from sitegen.compose.apps import variant_apps
from sitegen.model import Site, resolve
from sitegen.model.services import BackupSchedule


@dataclass(frozen=True)
class Copy:
    data: str
    where: str  # "-" where there is none
    rpo_hours: float | None  # None: no scheduled copy
    kept_days: int | None
    how: str


def _scheduled(data: str, where: str, schedule: BackupSchedule, how: str) -> Copy:
    return Copy(data, where, schedule.longest_gap_seconds / 3600, schedule.retention_days, how)


def recovery_points(site: Site) -> list[Copy]:
    backups = site.services.backups
    second = backups.second
    first = f"AIStor s3://{backups.bucket}"

    def other(consumer: str) -> str:
        return f"{second.name} s3://{second.bucket_of(consumer)}"

    velero = backups.velero
    aistor = site.aistor_layout()
    return [
        _scheduled("etcd", f"{first}/etcd/", backups.etcd, "snapshot of a member (etcd-backup)"),
        _scheduled("etcd", f"{other('etcd')}/etcd/", second.etcd, "snapshot of a member (etcd-backup)"),
        _scheduled("cluster PKI", f"{other('pki')}/pki/", second.pki, "kubeadm's CAs, CMS-encrypted to an offline key"),
        _scheduled("platform objects", f"{first}/velero/", velero.platform, "Velero, with cluster-scoped objects"),
        _scheduled("platform objects", f"{other('velero')}/velero/", second.velero, "Velero, every namespace"),
        _scheduled("tenant objects", f"{first}/velero/", velero.tenants, "Velero"),
        _scheduled("tenant objects", f"{other('velero')}/velero/", second.velero, "Velero, every namespace"),
        _scheduled("tenant volumes", "PowerScale (CSI snapshots)", velero.tenants, "Velero's tenants schedule"),
        Copy("tenant volumes", "-", None, None, "no second copy: Velero's data mover (node agent) is not "
             "deployed; PowerScale's own replication is outside this model"),
        *(Copy(f"{name} volumes", "-", None, None, f"skipped by the tenants' backup: {why}")
          for name, why in Velero.unsnapshotted_classes.items()),
        Copy("AIStor objects", "-", None, None, f"erasure coded in place (EC:{aistor.parity}), no copy: models "
             "and images come back from their sources, logs and metrics expire"),
        Copy("secrets, site CA", "-", None, None, "in the vault, outside the site: its own snapshots"),
    ]  # fmt: skip


@dataclass(frozen=True)
class StatedVolume:
    where: str  # the variants' clusters that run it: `<variant>/<cluster>, ...`
    app: str
    workload: str
    holds: str
    data: str
    copies: tuple[str, ...]
    without_copy: str


def stated_volumes(site: Site) -> list[StatedVolume]:
    """Every workload with volumes, as its component states it (Component.state; the rule DATA-001
    holds the tree to it), once for all the variants' clusters that run it."""
    found: dict[tuple[str, str, str, str, tuple[str, ...], str], list[str]] = {}
    for name in site.variants:
        apps = variant_apps(site, resolve(site, name))
        for ctx in apps.contexts:
            for component in ctx.components:
                for s in component.state(ctx):
                    key = (component.name, s.workload, s.holds, s.data, s.copies, s.without_copy)
                    found.setdefault(key, []).append(f"{name}/{ctx.cluster.name}")
    return [
        StatedVolume(", ".join(where), app, workload, holds, data, copies, without)
        for (app, workload, holds, data, copies, without), where in sorted(found.items())
    ]
