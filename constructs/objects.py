"""Untyped API objects: for kinds without generated classes (CRDs not imported, config-file kinds)."""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from cdk8s import ApiObject

from constructs import Construct
from sitegen.model import Placement

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


# The capabilities the Pod Security baseline lets a container add (Pod Security Standards, baseline,
# "Capabilities"): any other (SYS_ADMIN, NET_ADMIN, SYS_PTRACE, BPF, ...) reaches the node.
BASELINE_CAPABILITIES = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
)  # fmt: skip
POD_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


# The security profiles that confine a container, which the baseline forbids turning off (Unconfined)
CONFINING_PROFILES = ("seccompProfile", "appArmorProfile")


def _unconfined(security: Mapping[str, Any]) -> bool:
    return any((security.get(p) or {}).get("type") == "Unconfined" for p in CONFINING_PROFILES)


def reaches_host(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's spec reaches its node, what the Pod Security baseline forbids: the host's network,
    PIDs or IPC, a hostPath, a container (debug containers included) that is privileged, adds a
    capability beyond the baseline's or runs without seccomp or AppArmor."""
    containers = [c for key in POD_CONTAINER_LISTS for c in pod.get(key) or []]
    contexts = [c.get("securityContext") or {} for c in containers]
    return bool(
        pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC")
        or any("hostPath" in v for v in pod.get("volumes") or [])
        or _unconfined(pod.get("securityContext") or {})
        or any(s.get("privileged") or _unconfined(s) for s in contexts)
        or any(set((s.get("capabilities") or {}).get("add") or []) - set(BASELINE_CAPABILITIES) for s in contexts)
    )  # fmt: skip


# The fields of each object beyond its metadata, kept on this side of jsii: cdk8s's ApiObject takes
# only metadata in its props, and adding the rest as JSON patches costs two round trips to Node per
# object (JsonPatch.add, add_json_patch), half of all an edit-loop synth makes. `with_bodies` puts them
# back into what the chart or object synthesizes to. They are kept as JSON, taken when the object is
# made, as jsii would have sent them: a later change of the caller's dicts does not reach the object.
_BODIES: weakref.WeakKeyDictionary[ApiObject, tuple[tuple[str, str, str, str], str]] = (
    weakref.WeakKeyDictionary()
)


def api_object(
    scope: Construct,
    id: str,
    api_version: str,
    kind: str,
    metadata: dict[str, Any] | None = None,
    **body: Any,
) -> ApiObject:
    """An ApiObject of `metadata` as given; every other top-level field (spec, data, ...) joins it when
    its chart synthesizes (`with_bodies`). Add them here, not as JSON patches of the object."""
    obj = ApiObject(scope, id, api_version=api_version, kind=kind, metadata=metadata)
    if body:
        name = (metadata or {}).get("name") or obj.name  # cdk8s names an object without one
        key = (api_version, kind, (metadata or {}).get("namespace") or "", name)
        _BODIES[obj] = (key, json.dumps(body))
    return obj


def _key(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    return (doc["apiVersion"], doc["kind"], meta.get("namespace") or "", meta.get("name") or "")


def _without_nulls(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


def _js_number(text: str) -> float | int:
    """A JSON number as Node hands it back: JavaScript has one number type, so 1.0 returns as 1."""
    number = float(text)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def with_bodies(documents: list[dict[str, Any]], objects: Iterable[object]) -> list[dict[str, Any]]:
    """`documents` (what cdk8s synthesized `objects` to) with the fields `api_object` kept: each a
    copy, so that no two documents share a value, and as the round trip through Node would have
    returned it (a mapping's null values left out, whole floats as integers)."""
    held: dict[tuple[str, str, str, str], str] = {}
    for obj in objects:
        if isinstance(obj, ApiObject) and obj in _BODIES:
            key, body = _BODIES[obj]
            if key in held:
                raise ValueError(f"two objects {key} in one chart")
            held[key] = body
    for doc in documents:
        body = held.pop(_key(doc), None)
        if body is not None:
            doc.update(json.loads(body, object_hook=_without_nulls, parse_float=_js_number))
    if held:
        raise ValueError(f"objects kept but not synthesized: {sorted(held)}")
    return documents


def cron_job(
    scope: Construct,
    id: str,
    metadata: dict[str, Any],
    *,
    schedule: str,
    job: dict[str, Any],
    job_labels: dict[str, str] | None = None,
    suspend: bool = False,
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
            **({"suspend": True} if suspend else {}),
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


IN_CLUSTER_API = "https://kubernetes.default.svc"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def script_pod(
    container: str,
    image_ref: str,
    script: str,
    env: Mapping[str, str],
    placement: Placement,
    *,
    volumes: Mapping[str, dict[str, Any]],
    mounts: Mapping[str, str],
    account: str | None = None,
) -> dict[str, Any]:
    """The pod of a Job that runs a shell `script` once, as nobody and `restricted`, its root file
    system read-only but for a small /tmp: `volumes` by name, each mounted read-only where `mounts`
    says. With `account` it calls the API server as that service account (SA_DIR, API_SERVER in its
    environment); without, it gets no token."""
    if account is not None:
        env = {**env, "SA_DIR": SERVICE_ACCOUNT_DIR, "API_SERVER": IN_CLUSTER_API}
    return {
        **({"serviceAccountName": account} if account else {"automountServiceAccountToken": False}),
        "restartPolicy": "Never",
        "nodeSelector": placement.node_selector,
        "tolerations": list(placement.tolerations),
        "securityContext": NOBODY_POD,
        "containers": [
            {
                "name": container,
                "image": image_ref,
                "command": ["/bin/sh", "-c", script],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                "securityContext": {**RESTRICTED_CONTAINER, "readOnlyRootFilesystem": True},
                "volumeMounts": [
                    *({"name": name, "mountPath": path, "readOnly": True} for name, path in mounts.items()),
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
            }
        ],
        "volumes": [
            *({"name": name, **source} for name, source in volumes.items()),
            {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
        ],
    }
