"""What the site's alerts watch, as the components that own each part declare it (`Component.watches`):
a pool's GPUs, a pool's NDR ports, the AIStor erasure set's parity, the GPU health checks, a schedule
that must succeed, a database, a GPU node guard, the log collectors, a spoke's Argo CD token, network
policies in audit, a certificate chain's end.

The hub evaluates the rules on its own series and on those the other clusters' agents write to it, so
`SiteRisks.gathered` takes the watches of every cluster of the variant, each once: one alert covers a
concern in every cluster, counted by the `cluster` label where that matters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from constructs.node_faults import FabricPool

RUN_MARGIN_SECONDS = 3600  # a run takes time, and Prometheus scrapes every so often


@dataclass(frozen=True)
class GpuPoolWatch:
    """A GPU pool: how many GPUs each of its hosts shows (DCGM), and which hosts."""

    pool: str
    gpus_per_node: int
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ErasureWatch:
    """AIStor's erasure coding: past `parity` offline drives one set may have no redundancy left."""

    parity: int


@dataclass(frozen=True)
class HealthWatch:
    """The periodic GPU health checks: where they run, and how old their last pass may get."""

    namespace: str
    max_age_days: int


@dataclass(frozen=True)
class PolicyAuditWatch:
    """Cilium only logs what the network policies would drop: a reminder until config says enforce."""


@dataclass(frozen=True)
class LogShippingWatch:
    """A log collector (the OpenTelemetry Collector) of the site: what it fails to send waits in its
    queue in memory, lost once the queue is full or the collector restarts."""


@dataclass(frozen=True)
class MetricsDeliveryWatch:
    """A cluster whose Prometheus agent writes its series to the hub: once they stop arriving, every
    rule on that cluster is blind, and says nothing."""

    cluster: str


@dataclass(frozen=True)
class SpokeTokenWatch:
    """A spoke reached with an Argo CD token that expires after `days`."""

    days: int


@dataclass(frozen=True)
class BackupWatch:
    """A scheduled backup: a CronJob (of `namespace`) or a Velero Schedule (of Velero's)."""

    kind: Literal["cronjob", "velero"]
    name: str  # the CronJob's or the Schedule's
    subject: str  # what the alerts call it
    longest_gap_seconds: int  # between two runs, by its schedule
    namespace: str = ""

    @property
    def stale_after_seconds(self) -> int:
        return self.longest_gap_seconds + RUN_MARGIN_SECONDS

    @property
    def alert_prefix(self) -> str:
        camel = "".join(part.title() for part in self.name.split("-"))
        return camel if self.kind == "cronjob" else f"VeleroBackup{camel}"


@dataclass(frozen=True)
class ExpiryWatch:
    """A CronJob that fails while a certificate chain it reads ends within `days`."""

    namespace: str
    cronjob: str
    subject: str  # what the alerts call the chain
    alert_prefix: str
    days: int
    runbook_step: str  # the RUNBOOK step that renews it
    longest_gap_seconds: int  # between two runs, by its schedule

    @property
    def stale_after_seconds(self) -> int:
        return self.longest_gap_seconds + RUN_MARGIN_SECONDS


@dataclass(frozen=True)
class DatabaseWatch:
    """A CloudNativePG database: its namespace, its Cluster's name (the instances' pod names start
    with it), how many instances run, how far its WAL archive may fall behind, and the longest gap
    between its base backups (a restore replays every WAL segment since the last)."""

    namespace: str
    name: str
    instances: int
    archive_timeout_seconds: int
    base_backup_longest_gap_seconds: int

    @property
    def base_backup_stale_after_seconds(self) -> int:
        return self.base_backup_longest_gap_seconds + RUN_MARGIN_SECONDS


@dataclass(frozen=True)
class GuardWatch:
    """The GPU node guard of a cluster: its Deployment, how many nodes it cordons at most, and what for."""

    namespace: str
    name: str
    max_nodes: int
    conditions: tuple[tuple[str, str], ...]  # reason, PromQL (cordon_conditions)


Watch = (
    GpuPoolWatch
    | FabricPool
    | ErasureWatch
    | HealthWatch
    | PolicyAuditWatch
    | LogShippingWatch
    | MetricsDeliveryWatch
    | SpokeTokenWatch
    | BackupWatch
    | ExpiryWatch
    | DatabaseWatch
    | GuardWatch
)
W = TypeVar("W")


def _of(watches: tuple[Watch, ...], kind: type[W]) -> tuple[W, ...]:
    return tuple(w for w in watches if isinstance(w, kind))


@dataclass(frozen=True)
class SiteRisks:
    gpus_per_node: dict[str, tuple[int, tuple[str, ...]]]  # GPU pool -> (GPUs per node, its hosts)
    fabric_pools: tuple[FabricPool, ...]
    aistor_parity: int | None  # None: no AIStor in the variant
    nvme_wear_percent: int = 80
    health_namespace: str | None = None  # where the periodic GPU health checks run (None: none)
    health_max_age_days: int = 8
    policy_audit: bool = False  # Cilium only logs what the network policies would drop
    log_shipping: bool = False  # collectors ship the site's logs
    delivering: tuple[str, ...] = ()  # clusters whose agents write their series to the hub
    backups: tuple[BackupWatch, ...] = ()  # what must succeed on schedule, in any cluster of the variant
    spoke_token_days: int | None = None  # how long a spoke's Argo CD token lives (None: no spokes)
    guards: tuple[GuardWatch, ...] = ()  # the GPU node guards of the variant's clusters
    databases: tuple[DatabaseWatch, ...] = ()  # the site's PostgreSQL clusters (CloudNativePG)
    expiries: tuple[ExpiryWatch, ...] = ()  # certificate chains no cert-manager metric follows
    runbook: str = ""  # the RUNBOOK's path in the repository: where each alert's `runbook_url` points

    @classmethod
    def gathered(cls, declared: Iterable[Watch], *, runbook: str) -> SiteRisks:
        """The risks of what the components declared, in declaration order, each once."""
        watches = tuple(dict.fromkeys(declared))
        health = _of(watches, HealthWatch)
        tokens = _of(watches, SpokeTokenWatch)
        return cls(
            gpus_per_node={w.pool: (w.gpus_per_node, w.hosts) for w in _of(watches, GpuPoolWatch)},
            fabric_pools=_of(watches, FabricPool),
            aistor_parity=max((w.parity for w in _of(watches, ErasureWatch)), default=None),
            health_namespace=health[0].namespace if health else None,
            health_max_age_days=health[0].max_age_days if health else cls.health_max_age_days,
            policy_audit=bool(_of(watches, PolicyAuditWatch)),
            log_shipping=bool(_of(watches, LogShippingWatch)),
            delivering=tuple(w.cluster for w in _of(watches, MetricsDeliveryWatch)),
            # CronJobs first, then Velero's Schedules
            backups=tuple(sorted(_of(watches, BackupWatch), key=lambda w: w.kind)),
            spoke_token_days=min((w.days for w in tokens), default=None),
            guards=_of(watches, GuardWatch),
            databases=_of(watches, DatabaseWatch),
            expiries=_of(watches, ExpiryWatch),
            runbook=runbook,
        )
