"""Rules over the backups in the tree: a copy of each cluster's state outside AIStor, and an alert on
every backup that stops succeeding."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import yaml

from constructs.etcd_backup import HOST_ARCHIVE_DIR
from sitegen.check.bringup.kube import pod_template
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.components.storage.aistor import AIStor
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


def _pod(doc: Document) -> Mapping[str, Any]:
    template = pod_template(doc.body)
    return template.spec if template is not None else {}


def _produces(doc: Document) -> str | None:
    """What a CronJob backs up: etcd (an etcdctl snapshot), the cluster PKI (the host's encrypted PKI
    archive, which the control-plane hosts make from kubeadm's PKI directory, mounted), a database (`pg_dump` of the server its PGHOST names: `database <host>`), else None."""
    pod = _pod(doc)
    containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    if any("snapshot" in c.get("command", []) and "save" in c.get("command", []) for c in containers):
        return "etcd"
    if any(v.get("hostPath", {}).get("path") == HOST_ARCHIVE_DIR for v in pod.get("volumes", [])):
        return "cluster PKI"
    for c in containers:
        if c.get("command", [""])[0] == "pg_dump":
            host = next((e.get("value", "") for e in c.get("env", []) if e.get("name") == "PGHOST"), "")
            return f"database {host}"
    return None


def _same_database(cluster: Document, produced: str) -> bool:
    """Whether a dump (`database <PGHOST>`) reads the CloudNativePG Cluster: its Services are
    `<cluster>-rw|-ro|-r`, in its namespace or named with it."""
    if not produced.startswith("database "):
        return False
    host = produced.removeprefix("database ").split(".")
    service, namespace = host[0], host[1] if len(host) > 1 else cluster.namespace
    return namespace == cluster.namespace and service.rsplit("-", 1)[0] == cluster.name


def _upload_host(doc: Document) -> str | None:
    for container in _pod(doc).get("containers", []):
        for env in container.get("env", []):
            if env.get("name") == "S3_HOST":
                return env.get("value")
    return None


def _host(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")


@rule(
    "BAK-001",
    "second-copy",
    "a backup that lives only in AIStor dies with it: each cluster's etcd, its PKI and its objects "
    "(Velero) need a copy on a target outside AIStor",
)
def _second_copy(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    by_cluster = ctx.cluster_objects
    for (variant, _), docs in sorted(by_cluster.items()):
        layout = ctx.layouts.get(variant)
        if layout is None:
            continue
        aistor = {AIStor.s3_endpoint(ctx.site, c).host for c in layout.clusters}
        anchor = min(docs, key=lambda d: (d.file.as_posix(), d.index))
        produced = [
            (what, doc, _upload_host(doc))
            for doc in docs
            if doc.kind == "CronJob" and (what := _produces(doc)) is not None
        ]
        needs: list[tuple[str, Document, Callable[[str], bool]]] = [
            ("etcd", anchor, "etcd".__eq__),
            ("cluster PKI", anchor, "cluster PKI".__eq__),
        ]
        for database in docs:
            if database.kind == "Cluster" and database.api_version.startswith("postgresql.cnpg.io/"):
                needs.append((f"database {database.namespace}/{database.name}", database,
                              partial(_same_database, database)))  # fmt: skip
        for what, where, matches in needs:
            found = [(doc, host) for kind, doc, host in produced if matches(kind)]
            if not any(host is not None and host not in aistor for _, host in found):
                where = found[0][0] if found else where
                yield Violation(where, "$.spec", f"{what} of cluster {anchor.cluster} has no copy outside "
                                "AIStor: add a CronJob that puts it on the second backup target")  # fmt: skip
        locations = {
            d.name: _host(d.body["spec"].get("config", {}).get("s3Url", ""))
            for d in docs
            if d.kind == "BackupStorageLocation"
        }
        schedules = [d for d in docs if d.kind == "Schedule" and d.api_version.startswith("velero.io/")]
        if schedules and not any(
            locations.get(s.body["spec"]["template"].get("storageLocation", ""), "") not in aistor | {""}
            for s in schedules
        ):
            yield Violation(schedules[0], "$.spec.template.storageLocation", f"Velero of cluster "
                            f"{anchor.cluster} backs up only into AIStor: add a Schedule on a location "
                            "outside it")  # fmt: skip


def _alerted(docs: list[Document]) -> str:
    return "\n".join(
        r.get("expr", "")
        for d in docs
        if d.kind == "PrometheusRule"
        for g in d.body.get("spec", {}).get("groups", [])
        for r in g.get("rules", [])
        if "alert" in r
    )


@rule(
    "BAK-002",
    "backup-alerts",
    "a backup nobody hears fail is found missing on the day of the restore: each backup CronJob, "
    "Velero Schedule and database ScheduledBackup has an alert on its last success",
)
def _backup_alerts(ctx: Context) -> Iterator[Violation]:
    by_variant: dict[str, list[Document]] = {}
    for doc in ctx.docs:
        if not doc.is_values and not doc.is_host_file:
            by_variant.setdefault(doc.variant, []).append(doc)
    for _, docs in sorted(by_variant.items()):
        exprs = _alerted(docs)
        for doc in docs:
            if doc.kind == "CronJob" and _produces(doc) is not None:
                watched = f'kube_cronjob_status_last_successful_time{{namespace="{doc.namespace}", cronjob="{doc.name}"}}'
            elif doc.kind == "Schedule" and doc.api_version.startswith("velero.io/"):
                watched = f'velero_backup_last_successful_timestamp{{schedule="{doc.name}"}}'
            elif doc.kind == "ScheduledBackup" and doc.api_version.startswith("postgresql.cnpg.io/"):
                cluster = doc.body["spec"]["cluster"]["name"]
                watched = (f'barman_cloud_cloudnative_pg_io_last_available_backup_timestamp{{namespace="{doc.namespace}", '
                           f'pod=~"{cluster}-[0-9]+"}}')  # fmt: skip
            else:
                continue
            if watched not in exprs:
                yield Violation(doc, "$.metadata.name", f"no alert watches {watched}: a failed or stale "
                                "backup would go unnoticed")  # fmt: skip


def _skipped_classes(docs: list[Document], schedule: Document) -> set[str]:
    """The StorageClasses the Schedule's volume policy (a ConfigMap's `policy.yaml`) skips."""
    ref = schedule.body["spec"]["template"].get("resourcePolicy") or {}
    found = [
        d
        for d in docs
        if d.kind == "ConfigMap" and d.name == ref.get("name") and d.namespace == schedule.namespace
    ]
    skipped: set[str] = set()
    for config_map in found:
        policy = yaml.safe_load(dig(config_map.body, "data", "policy.yaml", default="")) or {}
        for p in policy.get("volumePolicies") or []:
            if dig(p, "action", "type") == "skip":
                skipped.update(dig(p, "conditions", "storageClass") or [])
    return skipped


def _claims(docs: list[Document], namespaces: list[str]) -> Iterator[tuple[Document, str, str | None]]:
    """(document, claim name, its class) of the claims rendered in the namespaces: PersistentVolumeClaims
    and StatefulSets' claim templates ("*": every namespace)."""
    for doc in docs:
        if "*" not in namespaces and doc.namespace not in namespaces:
            continue
        if doc.kind == "PersistentVolumeClaim":
            yield doc, doc.name, doc.body.get("spec", {}).get("storageClassName")
        elif doc.kind == "StatefulSet":
            for t in doc.body.get("spec", {}).get("volumeClaimTemplates") or []:
                yield doc, t["metadata"]["name"], t.get("spec", {}).get("storageClassName")


@rule(
    "BAK-003",
    "snapshot-able-claims",
    "a Velero Schedule that snapshots volumes fails on a claim whose CSI driver has no "
    "VolumeSnapshotClass: each claim it covers has one, or the Schedule's volume policy skips its class",
)
def _snapshot_able_claims(ctx: Context) -> Iterator[Violation]:
    by_cluster = ctx.cluster_objects
    for _, docs in sorted(by_cluster.items()):
        drivers = {d.body.get("driver") for d in docs if d.kind == "VolumeSnapshotClass"}
        classes = {d.name: d.body.get("provisioner") for d in docs if d.kind == "StorageClass"}
        default = next(
            (d.name for d in docs if d.kind == "StorageClass"
             and dig(d.body["metadata"], "annotations", "storageclass.kubernetes.io/is-default-class") == "true"),
            None,
        )  # fmt: skip
        for schedule in docs:
            if schedule.kind != "Schedule" or not schedule.api_version.startswith("velero.io/"):
                continue
            template = schedule.body["spec"]["template"]
            if template.get("snapshotVolumes") is False:
                continue
            skipped = _skipped_classes(docs, schedule)
            for doc, claim, name in _claims(docs, template.get("includedNamespaces") or ["*"]):
                name = name or default
                if name in skipped or classes.get(name or "") in drivers:
                    continue
                yield Violation(doc, "$.spec", f"claim {claim} (class {name}, driver {classes.get(name or '')}) "
                                f"has no VolumeSnapshotClass and the volume policy of Schedule {schedule.name} "
                                "does not skip it: the backup fails on it")  # fmt: skip
