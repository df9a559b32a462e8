"""Untyped API objects: for kinds without generated classes (CRDs not imported, config-file kinds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdk8s import ApiObject, JsonPatch

from constructs import Construct

SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
# For a CR whose CRD another Application installs: Argo CD skips the dry run until the CRD exists.
SKIP_DRY_RUN = {SYNC_OPTIONS: "SkipDryRunOnMissingResource=true"}
# Fields of an object another owner created (kubeadm, the kubelet): applied server-side, never pruned
# or deleted by Argo CD.
PARTIAL_OBJECT = {SYNC_OPTIONS: "ServerSideApply=true,Prune=false,Delete=false"}
# The pod context of a shell Job (curl): restricted, as nobody.
NOBODY_POD = {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}}


# The kinds whose objects make pods (a Pod itself included).
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod")
# The kinds whose objects make the API server call a Service: webhooks and aggregated APIs.
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService")

# The container context the `restricted` Pod Security level asks for.
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def pod_account(spec: Mapping[str, Any]) -> str:
    """The ServiceAccount a pod runs as, as the API server reads its spec: `serviceAccountName`, else
    the deprecated `serviceAccount` (some charts still write only that; the v1 conversion copies it
    over), else `default`."""
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"


def reaches_host(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's spec reaches its node: the host's network or PIDs, a hostPath, a privileged container."""
    containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
    return bool(
        pod.get("hostNetwork") or pod.get("hostPID")
        or any("hostPath" in v for v in pod.get("volumes") or [])
        or any((c.get("securityContext") or {}).get("privileged") for c in containers)
    )  # fmt: skip


def api_object(
    scope: Construct,
    id: str,
    api_version: str,
    kind: str,
    metadata: dict[str, Any] | None = None,
    **body: Any,
) -> ApiObject:
    """`metadata` as given; every other top-level field (spec, data, ...) is added by a JSON patch,
    since cdk8s's ApiObject takes nothing but metadata in its props."""
    obj = ApiObject(scope, id, api_version=api_version, kind=kind, metadata=metadata)
    if body:  # one call for all (each is a round trip to the jsii runtime)
        obj.add_json_patch(*(JsonPatch.add(f"/{key}", value) for key, value in body.items()))
    return obj


def cron_job(
    scope: Construct,
    id: str,
    metadata: dict[str, Any],
    *,
    schedule: str,
    job: dict[str, Any],
    job_labels: dict[str, str] | None = None,
) -> ApiObject:
    """A CronJob in UTC that never overlaps itself and keeps the last three runs of each outcome."""
    template: dict[str, Any] = {"spec": job}
    if job_labels:
        template["metadata"] = {"labels": job_labels}
    return api_object(
        scope,
        id,
        "batch/v1",
        "CronJob",
        metadata,
        spec={
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": template,
        },
    )


def account_with_cluster_role(
    scope: Construct, name: str, namespace: str, rules: list[dict[str, Any]]
) -> None:
    """A ServiceAccount `namespace/name` bound to a ClusterRole `name` of exactly `rules`."""
    rbac = "rbac.authorization.k8s.io"
    scope = Construct(scope, "ClusterAccess")
    api_object(scope, "Account", "v1", "ServiceAccount", {"name": name, "namespace": namespace})
    api_object(scope, "Role", f"{rbac}/v1", "ClusterRole", {"name": name}, rules=rules)
    api_object(
        scope,
        "Binding",
        f"{rbac}/v1",
        "ClusterRoleBinding",
        {"name": name},
        roleRef={"apiGroup": rbac, "kind": "ClusterRole", "name": name},
        subjects=[{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    )
