"""The alerts for the site's own risks: one PrometheusRule on the hub, whose rules cover every cluster
of the variant (the other clusters' agents write their series to the hub).

The thresholds that depend on the site (GPUs per node, NDR ports per node, erasure parity) are
computed from the site model, so a hardware or layout change moves the alert with it.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.alert_rule import alert as _alert
from constructs.alert_rule import per_node
from constructs.gpu_alerts import gpu_rules
from constructs.monitoring import MONITORING
from constructs.node_faults import (
    IB_PORT_ACTIVE,
    NDR_ERROR_COUNTERS,
    POOL_LABEL,
    ndr_errors,
    ndr_link_down,
)
from constructs.objects import SKIP_DRY_RUN, api_object
from constructs.site_watches import SiteRisks

GITOPS_RUNBOOK_SECTION = "when-argo-cd-alerts"  # the anchor of the RUNBOOK's section on these alerts


def _health_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """The periodic NCCL and DCGM checks: a failed run (bandwidth below the promise, a failed
    diagnostic) and no passed run for too long (the GPUs were never idle, or Kueue never admitted it)."""
    ns = f'namespace="{risks.health_namespace}"'
    age = risks.health_max_age_days * 86400
    return [
        _alert(
            "GpuHealthCheckFailed",
            f"max by (cluster, job_name) (kube_job_status_failed{{{ns}}}) > 0 and on (cluster, job_name) "
            f"(time() - max by (cluster, job_name) (kube_job_status_start_time{{{ns}}})) < 86400",
            "warning",
            "GPU health check {{ $labels.job_name }} failed: its log has the bus bandwidth or the failed "
            "DCGM test; take the nodes it ran on out and check them",
            for_="0m",
        ),
        _alert(
            "GpuHealthCheckStale",
            # since its last pass, or since it was made when it never passed (kube-state-metrics writes
            # the last success only once there is one), per cluster: a suspended one (a burn-in) aside
            f"(time() - (max by (cluster, cronjob) (kube_cronjob_status_last_successful_time{{{ns}}}) "
            f"or max by (cluster, cronjob) (kube_cronjob_created{{{ns}}}))) > {age} "
            f"and on (cluster, cronjob) max by (cluster, cronjob) (kube_cronjob_spec_suspend{{{ns}}}) == 0",
            "warning",
            f"GPU health check {{{{ $labels.cronjob }}}} has not passed for {risks.health_max_age_days} days",
            for_="1h",
        ),
    ]


def _guard_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """A guard that stopped passing (its probe goes stale after a failed pass), and more broken GPU
    nodes in one cluster than its guard may cordon: the rest stay schedulable until a person looks.
    One rule each for every cluster's guard: the series carry their cluster (a spoke's external label)."""
    if not risks.guards:
        return []
    first = risks.guards[0]
    assert all(
        (g.namespace, g.name, g.max_nodes) == (first.namespace, first.name, first.max_nodes)
        for g in risks.guards
    )
    failing = " or ".join(sorted({q for g in risks.guards for _, q in g.conditions}))
    return [
        _alert(
            "GpuNodeGuardDown",
            f'kube_deployment_status_replicas_available{{namespace="{first.namespace}", '
            f'deployment="{first.name}"}} < 1',
            "critical",
            "the GPU node guard is not passing: a GPU node with a fatal Xid or a link down stays "
            f"schedulable (kubectl -n {first.namespace} logs deploy/{first.name})",
            for_="10m",
        ),
        _alert(
            "GpuNodesBrokenPastGuardLimit",
            f"count by (cluster) ({failing}) > {first.max_nodes}",
            "critical",
            f"{{{{ $value }}}} GPU nodes broken, the guard cordons at most {first.max_nodes}: a fabric "
            "or switch fault? cordon the nodes by hand once the cause is known",
            for_="5m",
        ),
    ]


def _backup_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """A backup that failed, one that has not succeeded for longer than its schedule allows, and one
    that never did, per cluster (the hub evaluates the spokes' series too)."""
    rules = []
    for watch in risks.backups:
        hours = watch.stale_after_seconds // 3600
        label, subject = watch.alert_prefix, watch.subject
        if watch.kind == "cronjob":
            cronjob = f'namespace="{watch.namespace}", cronjob="{watch.name}"'
            # a CronJob's Jobs are named after it and their scheduled minute
            jobs = f'namespace="{watch.namespace}", job_name=~"{watch.name}-[0-9]+"'
            last = f"max by (cluster) (kube_cronjob_status_last_successful_time{{{cronjob}}})"
            # kube-state-metrics writes a CronJob's last success only once it has one: a cluster whose
            # CronJob exists without it never succeeded there, whatever the other clusters' did
            never = (
                f"count by (cluster) (kube_cronjob_created{{{cronjob}}}) unless on (cluster) "
                f"count by (cluster) (kube_cronjob_status_last_successful_time{{{cronjob}}})"
            )
            failed = (
                f"max by (cluster, job_name) (kube_job_status_failed{{{jobs}}}) > 0 and on (cluster, job_name) "
                f"(time() - max by (cluster, job_name) (kube_job_status_start_time{{{jobs}}})) < {watch.stale_after_seconds}"
            )
        else:
            where = f'schedule="{watch.name}"'
            last = f"max by (cluster) (velero_backup_last_successful_timestamp{{{where}}})"
            # Velero keeps these in memory from its start (pkg/metrics InitSchedule): the last status 0
            # and the counters 0 until a backup ends, the last success's time only once one succeeded
            window = f"[{watch.stale_after_seconds}s]"
            failures = " + ".join(
                f"increase(velero_backup_{kind}_total{{{where}}}{window})"
                for kind in ("failure", "partial_failure", "validation_failure")
            )
            failed = (
                f"max by (cluster) (velero_backup_last_status{{{where}}}) != 1 "
                f"and on (cluster) max by (cluster) ({failures}) > 0"
            )
            never = (
                f"count by (cluster) (velero_backup_attempt_total{{{where}}}) unless on (cluster) "
                f"count by (cluster) (velero_backup_last_successful_timestamp{{{where}}})"
            )
        rules += [
            _alert(f"{label}Failed", failed, "warning",
                   f"{subject} failed in {{{{ $labels.cluster }}}}: read its logs before the next run", for_="15m"),
            _alert(f"{label}Stale", f"(time() - {last}) > {watch.stale_after_seconds}", "critical",
                   f"{subject} has not succeeded for more than {hours} h in {{{{ $labels.cluster }}}}", for_="0m"),
            _alert(f"{label}Missing", never, "critical",
                   f"{subject} has never succeeded in {{{{ $labels.cluster }}}} since monitoring started ({hours} h)", for_=f"{hours}h"),
        ]  # fmt: skip
    return rules


def _expiry_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """A certificate chain about to end (its daily check's last run failed), and a check that stopped
    telling: it has not succeeded for a day and more, or never has."""
    rules = []
    for watch in risks.expiries:
        jobs = f'namespace="{watch.namespace}", job_name=~"{watch.cronjob}-[0-9]+"'
        cronjob = f'namespace="{watch.namespace}", cronjob="{watch.cronjob}"'
        stale = watch.stale_after_seconds
        failed = (
            f"max by (cluster, job_name) (kube_job_status_failed{{{jobs}}}) > 0 and on (cluster, job_name) "
            f"(time() - max by (cluster, job_name) (kube_job_status_start_time{{{jobs}}})) < {stale}"
        )
        last = f"max by (cluster) (kube_cronjob_status_last_successful_time{{{cronjob}}})"
        never = (
            f"count by (cluster) (kube_cronjob_created{{{cronjob}}}) unless on (cluster) "
            f"count by (cluster) (kube_cronjob_status_last_successful_time{{{cronjob}}})"
        )
        check = f"{watch.namespace}/{watch.cronjob}"
        rules += [
            _alert(f"{watch.alert_prefix}ExpiresSoon", failed, "critical",
                   f"{watch.subject[:1].upper()}{watch.subject[1:]} ends within {watch.days} days in "
                   "{{ $labels.cluster }}, taking every certificate signed under it along (or "
                   f"{check} could not read the chain: its log says which): RUNBOOK step \"{watch.runbook_step}\"",
                   for_="0m"),
            _alert(f"{watch.alert_prefix}ExpiryUnchecked", f"(time() - {last}) > {stale}", "warning",
                   f"{check} has not passed for {stale // 3600} h in {{{{ $labels.cluster }}}}: the end of "
                   f"{watch.subject} goes unwatched", for_="0m"),
            _alert(f"{watch.alert_prefix}ExpiryNeverChecked", never, "warning",
                   f"{check} has never passed in {{{{ $labels.cluster }}}}", for_=f"{stale // 3600}h"),
        ]  # fmt: skip
    return rules


def _database_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """A database's WAL archive falling behind (a point in time past it cannot come back; the primary's
    volume fills with WAL it cannot archive), an instance down (a node lost: the next one lost takes
    the synchronous standby), a standby that does not stream, a base backup that is late. CloudNativePG's
    exporter (`cnpg_pg_stat_archiver_*`, `cnpg_collector_up`, `cnpg_pg_replication_*`) and the Barman
    Cloud plugin's (`barman_cloud_cloudnative_pg_io_*`), on each instance."""
    rules = []
    for db in risks.databases:
        pods = f'namespace="{db.namespace}", pod=~"{db.name}-[0-9]+"'
        label = "".join(part.title() for part in db.name.split("-"))
        primary = f"cnpg_pg_stat_archiver_seconds_since_last_archival{{{pods}}} unless on (pod) (cnpg_pg_replication_in_recovery{{{pods}}} == 1)"
        behind = 3 * db.archive_timeout_seconds
        rules += [
            _alert(f"{label}WalArchiveBehind", f"max by (cluster) ({primary}) > {behind}", "critical",
                   f"{db.name}'s WAL has not reached the archive for more than {behind // 60} min in "
                   "{{ $labels.cluster }}: the ObjectStore's credentials, AIStor, or the plugin", for_="5m"),
            _alert(f"{label}WalArchiveFailing",
                   f"max by (cluster) (increase(cnpg_pg_stat_archiver_failed_count{{{pods}}}[10m])) > 0", "warning",
                   f"{db.name} fails to archive WAL in {{{{ $labels.cluster }}}} (it retries)", for_="10m"),
            _alert(f"{label}InstanceDown", f"count by (cluster) (cnpg_collector_up{{{pods}}} == 1) < {db.instances}",
                   "warning", f"fewer than {db.instances} instances of {db.name} run in {{{{ $labels.cluster }}}}: "
                   "one more lost leaves no synchronous standby", for_="10m"),
            # with no instance up the count above is empty, not below anything: this one says so (across
            # the clusters: a database runs in one cluster of a variant)
            _alert(f"{label}Down", f"absent(cnpg_collector_up{{{pods}}} == 1)", "critical",
                   f"no instance of {db.name} runs: what it serves has no database", for_="5m"),
            _alert(f"{label}StandbyNotStreaming",
                   f"min by (cluster) (cnpg_pg_replication_streaming_replicas{{{pods}}} unless on (pod) "
                   f"(cnpg_pg_replication_in_recovery{{{pods}}} == 1)) < {db.instances - 1}", "warning",
                   f"a standby of {db.name} does not stream from the primary in {{{{ $labels.cluster }}}}", for_="10m"),
            _alert(f"{label}BaseBackupStale",
                   f"time() - max by (cluster) (barman_cloud_cloudnative_pg_io_last_available_backup_timestamp{{{pods}}}) "
                   f"> {db.base_backup_stale_after_seconds}", "warning",
                   f"{db.name}'s last base backup in {{{{ $labels.cluster }}}} is older than "
                   f"{db.base_backup_stale_after_seconds // 3600} h: a restore replays every WAL segment since",
                   for_="30m"),
        ]  # fmt: skip
    return rules


def _gitops_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """Delivery that stopped converging: an Application that stays OutOfSync or not Healthy (drift
    self-heal cannot fix, a prune a `Prune=false` object waits for, a sync that keeps failing, a node
    holding a DaemonSet), a failed sync, an ApplicationSet that cannot generate its apps; and what the
    apps need at run time: ExternalSecrets that do not sync, certificates that do not renew. Argo CD's
    controllers' metrics (v3.4 controller/metrics, applicationset/metrics), External Secrets' and
    cert-manager's; every series carries the cluster it came from."""
    url = f"{risks.runbook}#{GITOPS_RUNBOOK_SECTION}" if risks.runbook else ""
    rules = [
        _alert("ArgoCdAppOutOfSync", 'argocd_app_info{sync_status!="Synced"} == 1', "warning",
               "{{ $labels.name }} is {{ $labels.sync_status }} for 30 minutes: its sync keeps failing, drift "
               "comes back, or an object it no longer ships waits to be pruned by hand", "30m", url),
        _alert("ArgoCdAppUnhealthy", 'argocd_app_info{health_status!~"Healthy|Suspended"} == 1', "warning",
               "{{ $labels.name }} is {{ $labels.health_status }} for 30 minutes (a node down keeps a "
               "DaemonSet's app Progressing)", "30m", url),
        _alert("ArgoCdSyncFailed", 'increase(argocd_app_sync_total{phase=~"Error|Failed"}[15m]) > 0',
               "warning", "a sync of {{ $labels.name }} failed: it retries, then waits for the next commit",
               "0m", url),
        _alert("ArgoCdApplicationSetError",
               'argocd_appset_info{resource_update_status!="ApplicationSetUpToDate"} == 1', "critical",
               "ApplicationSet {{ $labels.name }} cannot generate its Applications "
               "({{ $labels.resource_update_status }}): its root waits on it", "15m", url),
        _alert("ExternalSecretNotReady", 'externalsecret_status_condition{condition="Ready",status="False"} == 1',
               "warning", "ExternalSecret {{ $labels.namespace }}/{{ $labels.name }} does not sync from the "
               "vault (a missing key, a role that may not read it)", "15m", url),
        _alert("CertificateNotReady", 'certmanager_certificate_ready_status{condition="False"} == 1', "warning",
               "Certificate {{ $labels.namespace }}/{{ $labels.name }} is not ready: it is not issued or "
               "renewed", "15m", url),
        _alert("CertificateExpiresSoon",
               "certmanager_certificate_expiration_timestamp_seconds - time() < 14 * 86400", "critical",
               "Certificate {{ $labels.namespace }}/{{ $labels.name }} expires within 14 days and has not "
               "been renewed", "1h", url),
    ]  # fmt: skip
    if risks.spoke_token_days:
        rules += [
            _alert(
                "ArgoCdClusterDisconnected",
                "argocd_cluster_connection_status == 0",
                "critical",
                "Argo CD cannot reach {{ $labels.server }}: if its token expired (issued for "
                f"{risks.spoke_token_days} days), rotate it (RUNBOOK: Argo CD's credential)",
                for_="10m",
            ),
            _alert(
                "ArgoCdControllerMetricsAbsent",
                'absent(argocd_cluster_connection_status{server!="https://kubernetes.default.svc"})',
                "warning",
                "Argo CD reports no spoke connection: the spokes' reachability is unknown",
                for_="30m",
            ),
        ]
    return rules


def _fabric_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    rules = []
    for pool in risks.fabric_pools:
        rules += [
            _alert(
                "NdrLinkDown",
                ndr_link_down(pool),
                "critical",
                f"NDR link {{{{ $labels.device }}}} on {{{{ $labels.node }}}} (pool {pool.name}) is down",
                for_="2m",
            ),
            _alert(
                "NdrPortNotActive",
                f"node_infiniband_state_id{pool.ports} != {IB_PORT_ACTIVE}",
                "warning",
                f"NDR port {{{{ $labels.device }}}} on {{{{ $labels.node }}}} (pool {pool.name}) is up "
                "but not active: subnet manager or partition",
            ),
            _alert(
                "NdrPortMissing",
                per_node(
                    f"node_infiniband_state_id{pool.ports}",
                    f'{{{POOL_LABEL}="{pool.name}"}}',
                    len(pool.devices),
                ),
                "critical",
                f"{{{{ $labels.node }}}} (pool {pool.name}) shows {{{{ $value }}}} of its "
                f"{len(pool.devices)} NDR ports",
            ),
            *(
                _alert(
                    "NdrPortErrors",
                    ndr_errors(pool, counter, "15m"),
                    "warning",
                    f"NDR port {{{{ $labels.device }}}} on {{{{ $labels.node }}}} (pool {pool.name}) {said} "
                    "in the last 15 minutes: check its cable and transceiver before jobs slow down",
                    for_="0m",
                )
                for counter, said in NDR_ERROR_COUNTERS.items()
            ),
        ]
    return rules


def _storage_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    rules = [
        _alert(
            "NvmeWear",
            f"smartctl_device_percentage_used >= {risks.nvme_wear_percent}",
            "warning",
            "NVMe {{ $labels.device }} on {{ $labels.instance }} has used {{ $value }} % of its rated endurance",
            for_="1h",
        ),
        _alert(
            "NvmeSpareLow",
            "smartctl_device_available_spare < smartctl_device_available_spare_threshold",
            "critical",
            "NVMe {{ $labels.device }} on {{ $labels.instance }} is below its spare threshold",
            for_="1h",
        ),
    ]
    if risks.aistor_parity is not None:
        parity = risks.aistor_parity
        rules += [
            _alert(
                "AIStorDriveOffline",
                "minio_cluster_drive_offline_total > 0",
                "warning",
                "{{ $value }} AIStor drives offline; healing waits for their replacement",
            ),
            # Past `parity` offline drives one erasure set may already have lost its redundancy.
            _alert(
                "AIStorDrivesAtParity",
                f"minio_cluster_drive_offline_total >= {parity}",
                "critical",
                f"{{{{ $value }}}} AIStor drives offline: at EC:{parity} one erasure set may have no redundancy left",
                for_="0m",
            ),
            _alert(
                "AIStorNodeOffline",
                "minio_cluster_nodes_offline_total > 0",
                "critical",
                "{{ $value }} AIStor servers offline",
                for_="2m",
            ),
            # the alerts above read AIStor's own metrics: none at all means they are blind, not quiet
            _alert(
                "AIStorMetricsAbsent",
                "absent(minio_cluster_nodes_online_total)",
                "warning",
                "no AIStor metrics reach the hub: its drive, server and capacity alerts are blind (the "
                "ObjectStore's ServiceMonitor and its token, or the AIStor cluster's remote write)",
                for_="15m",
            ),
            _alert(
                "AIStorCapacityLow",
                "minio_cluster_capacity_usable_free_bytes / minio_cluster_capacity_usable_total_bytes < 0.1",
                "warning",
                "AIStor has less than 10 % usable capacity left",
                for_="30m",
            ),
        ]
    return rules


ETCD_RULES = [
    _alert(
        "EtcdDatabaseNearQuota",
        "etcd_mvcc_db_total_size_in_bytes / etcd_server_quota_backend_bytes > 0.8",
        "warning",
        "etcd on {{ $labels.instance }} uses {{ $value | humanizePercentage }} of its quota; defragment",
        for_="10m",
    )
]


# Rendered only while config/network.yaml asks for audit: a reminder that never resolves by itself.
POLICY_AUDIT_ALERT = _alert(
    "NetworkPolicyAuditMode",
    "vector(1)",
    "warning",
    "Cilium runs its network policies in audit mode: nothing is dropped, every namespace is open "
    "(kubernetes.network_policy: audit in config/network.yaml)",
    for_="0m",
)


# The collector's own counters (exporterhelper) as its Prometheus reader exposes them: `_total` since its
# telemetry moved to the OpenTelemetry SDK, whose exporter adds the suffix; the name without it is the
# OpenCensus-era one. Per collector pod and exporter; a spoke's carry its `cluster`.
def _collector_counter(name: str, window: str) -> str:
    return f'sum by (cluster, namespace, pod, exporter) (increase({{__name__=~"otelcol_exporter_{name}(_total)?"}}[{window}]))'


def _telemetry_rules(risks: SiteRisks) -> list[dict[str, Any]]:
    """The site's logs and the other clusters' series, which reach the hub or nobody hears of them."""
    rules = list(LOG_SHIPPING_RULES) if risks.log_shipping else []
    for cluster in risks.delivering:
        # the agent writes its scrapes' `up` with its external label `cluster`; absent() names it
        rules.append(_alert(
            "ClusterMetricsAbsent", f'absent(up{{cluster="{cluster}"}})', "critical",
            f"No series of cluster {cluster} reach the hub: its Prometheus agent does not write (its "
            "credential, the telemetry door, the agent itself), and every alert on that cluster is blind",
            for_="10m",
        ))  # fmt: skip
    return rules


LOG_SHIPPING_RULES = [
    _alert(
        "LogsNotShipped",
        f"{_collector_counter('send_failed_log_records', '10m')} > 0",
        "warning",
        "Log collector {{ $labels.namespace }}/{{ $labels.pod }} keeps failing to send logs through "
        "{{ $labels.exporter }}: they wait in its memory, lost when its queue fills or it restarts",
        for_="15m",
    ),
    _alert(
        "LogsDropped",
        f"{_collector_counter('enqueue_failed_log_records', '10m')} > 0",
        "critical",
        "Log collector {{ $labels.namespace }}/{{ $labels.pod }} dropped logs: the queue of "
        "{{ $labels.exporter }} is full",
        for_="0m",
    ),
]


class SiteAlerts(Construct):
    """Alert rules for the site's own risks; the chart's default rules cover Kubernetes and etcd."""

    def __init__(self, scope: Construct, id: str, *, namespace: str, risks: SiteRisks) -> None:
        super().__init__(scope, id)
        groups = [
            {"name": name, "rules": rules}
            for name, rules in (
                ("site-gpu", gpu_rules(risks) if risks.gpus_per_node else []),
                ("site-fabric", _fabric_rules(risks)),
                ("site-storage", _storage_rules(risks)),
                ("site-etcd", ETCD_RULES),
                ("site-health", _health_rules(risks) if risks.health_namespace else []),
                ("site-gpu-guard", _guard_rules(risks)),
                ("site-backups", _backup_rules(risks)),
                ("site-databases", _database_rules(risks)),
                ("site-network", [POLICY_AUDIT_ALERT] if risks.policy_audit else []),
                ("site-telemetry", _telemetry_rules(risks)),
                ("site-gitops", _gitops_rules(risks)),
                ("site-certificates", _expiry_rules(risks)),
            )
            if rules
        ]
        api_object(
            self,
            "Resource",
            MONITORING,
            "PrometheusRule",
            {"name": "site", "namespace": namespace, "annotations": SKIP_DRY_RUN},
            spec={"groups": groups},
        )
