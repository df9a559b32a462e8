"""ValidatingAdmissionPolicies evaluated offline, as the API server of Kubernetes 1.35 evaluates them:
a policy applies when a binding names it with the Deny action, its `matchConstraints` match the request
(group, resource, operation; `namespaceSelector` on the object's namespace, never skipping other
cluster-scoped objects), and every `matchConditions` expression holds; then each validation that is
false (or fails, with `failurePolicy: Fail`) refuses the request with its message. CEL runs in
cel-python, standard CEL only: the Kubernetes CEL libraries (quantity, regex helpers, `authorizer`) are
not available, so a policy that uses them is reported, not guessed.

Not modelled: `paramKind`/params, `variables`, `auditAnnotations`, `matchPolicy: Equivalent` across
API versions, `excludeResourceRules`, `objectSelector`, and plurals other than `<kind>s` lowercased.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy

from constructs.edge import NAMESPACE_NAME_LABEL
from constructs.objects import pod_account
from sitegen.cache import cache_dir
from sitegen.check.cel import environment
from sitegen.tree.fields import dig

_ENV = environment()
# Who creates the pods of each workload kind: kube-controller-manager's controllers, as themselves.
POD_MAKERS = {
    "Deployment": "system:serviceaccount:kube-system:replicaset-controller",
    "StatefulSet": "system:serviceaccount:kube-system:statefulset-controller",
    "DaemonSet": "system:serviceaccount:kube-system:daemon-set-controller",
    "Job": "system:serviceaccount:kube-system:job-controller",
    "CronJob": "system:serviceaccount:kube-system:job-controller",
}


def admitted_pod(
    namespace: str, name: str, labels: Mapping[str, str], spec: Mapping[str, Any]
) -> dict[str, Any]:
    """A workload's pod as validating admission sees it: the ServiceAccount plugin (mutating, earlier)
    has named its account."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name, "labels": dict(labels)},
        "spec": {**spec, "serviceAccountName": pod_account(spec)},
    }  # fmt: skip


def resource_of(api_version: str, kind: str) -> tuple[str, str]:
    """(group, resource) of an object: the plural the API serves for the kinds these policies match."""
    group = api_version.rpartition("/")[0]
    return group, kind.lower() + "s"


@dataclass(frozen=True)
class Request:
    user: str
    groups: tuple[str, ...] = ()
    operation: str = "CREATE"
    # userInfo.extra: a pod-bound token's `authentication.kubernetes.io/node-name`, for one
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def activation(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
        group, resource = resource_of(obj.get("apiVersion", ""), obj.get("kind", ""))
        request = {
            "operation": self.operation,
            "userInfo": {
                "username": self.user,
                "groups": list(self.groups),
                "extra": {k: list(v) for k, v in self.extra},
            },
            "resource": {"group": group, "resource": resource},
            "namespace": dig(obj, "metadata", "namespace", default=""),
            "name": dig(obj, "metadata", "name", default=""),
        }
        return {
            "object": celpy.json_to_cel(typed(obj)),
            "oldObject": celpy.json_to_cel(typed(old) if old is not None else None),
            "request": celpy.json_to_cel(request),
        }


def typed(value: Any) -> Any:
    """The object as the API server decodes it into its type: a field set to null is absent."""
    if isinstance(value, Mapping):
        return {k: typed(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return value


@dataclass(frozen=True)
class Policy:
    name: str
    spec: Mapping[str, Any]

    @functools.cached_property
    def digest(self) -> str:
        """The policy's content, as a memo key."""
        return hashlib.blake2b(
            json.dumps([self.name, self.spec], sort_keys=True).encode(), digest_size=12
        ).hexdigest()

    def matches(
        self, obj: Mapping[str, Any], namespace_labels: Mapping[str, str] | None, operation: str
    ) -> bool:
        constraints = self.spec.get("matchConstraints") or {}
        group, resource = resource_of(obj.get("apiVersion", ""), obj.get("kind", ""))
        if not any(
            {"*", group} & set(rule.get("apiGroups") or [])
            and {"*", resource} & set(rule.get("resources") or [])
            and {"*", operation} & set(rule.get("operations") or [])
            for rule in constraints.get("resourceRules") or []
        ):
            return False
        selector = dig(constraints, "namespaceSelector", "matchLabels") or {}
        if selector and namespace_labels is not None:  # a namespaced object: its namespace's labels
            # and the one the API server sets on every namespace (NamespaceDefaultLabelName)
            namespace = dig(obj, "metadata", "namespace", default="")
            labels = {**namespace_labels, NAMESPACE_NAME_LABEL: namespace}
            return all(labels.get(k) == v for k, v in selector.items())
        return True

    def refusal(
        self, obj: Mapping[str, Any], request: Request, old: Mapping[str, Any] | None = None
    ) -> str | None:
        """Why the API server refuses the request, or None when the policy admits it (kept for the
        process by policy, request and the objects' content: cel-python takes ~10 ms an expression)."""
        content = hashlib.blake2b(
            json.dumps([obj, old], sort_keys=True, default=str).encode(), digest_size=16
        )
        key = "|".join(
            [
                self.digest,
                content.hexdigest(),
                request.user,
                ",".join(request.groups),
                request.operation,
                json.dumps(request.extra),
            ]
        )
        verdicts = _verdicts()
        if key not in verdicts:
            verdicts[key] = self._refusal(obj, request, old)
            _NEW.add(key)
        return verdicts[key]

    def _refusal(self, obj: Mapping[str, Any], request: Request, old: Mapping[str, Any] | None) -> str | None:
        context = request.activation(obj, old)
        for condition in self.spec.get("matchConditions") or []:
            held = _on_request(condition["expression"], request, context)
            if isinstance(held, str):
                return f"ValidatingAdmissionPolicy {self.name}: matchCondition {condition['name']}: {held}"
            if not held:
                return None
        for validation in self.spec.get("validations") or []:
            held = _evaluate(validation["expression"], context)
            if isinstance(held, str):
                if self.spec.get("failurePolicy", "Fail") == "Fail":
                    return f"ValidatingAdmissionPolicy {self.name}: {held}"
                continue
            if not held:
                return f"ValidatingAdmissionPolicy {self.name}: {validation.get('message') or validation['expression']}"
        return None


_BY_REQUEST: dict[tuple[str, Request], bool | str] = {}
# Verdicts by policy, request and the objects' content: for the process, and in the git-ignored cache
# for the next one (validate fills it, bringup and the tests' runs over copies of one tree read it).
_REFUSALS: dict[str, str | None] = {}
_NEW: set[str] = set()
_LOADED: list[bool] = []
_CACHE_FILE = "admission-verdicts.json"


def _verdicts() -> dict[str, str | None]:
    if not _LOADED:
        _LOADED.append(True)
        with contextlib.suppress(OSError, ValueError):  # a cache: absent or torn, it is rebuilt
            _REFUSALS.update(json.loads((cache_dir() / _CACHE_FILE).read_text()))
        atexit.register(_save)
    return _REFUSALS


def _save() -> None:
    if not _NEW:
        return
    path = cache_dir() / _CACHE_FILE
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_REFUSALS, sort_keys=True))
        tmp.replace(path)
    _NEW.clear()


def _on_request(expression: str, request: Request, context: dict[str, Any]) -> bool | str:
    """An expression that reads only `request` (the usual match condition) is evaluated once per request."""
    if "object" in expression.replace("request.", ""):
        return _evaluate(expression, context)
    key = (expression, request)
    if key not in _BY_REQUEST:
        _BY_REQUEST[key] = _evaluate(expression, context)
    return _BY_REQUEST[key]


@functools.lru_cache(maxsize=256)
def _program(expression: str) -> Any:
    return _ENV.program(_ENV.compile(expression))


def _evaluate(expression: str, context: dict[str, Any]) -> bool | str:
    """The expression's truth, or what went wrong (a string) as the API server reports an error."""
    try:
        value = _program(expression).evaluate(context)
    except Exception as error:  # CELParseError, CELEvalError: the API server reports, Fail refuses
        return f"expression error: {str(error).splitlines()[0][:200]}"
    if isinstance(value, celpy.CELEvalError):
        return f"expression error: {str(value)[:200]}"
    return bool(value)


def denying_policies(bodies: Iterable[Mapping[str, Any]]) -> list[Policy]:
    """The policies of these objects that a binding enforces with Deny (cluster-wide bindings only)."""
    bodies = list(bodies)
    denied = {
        dig(b, "spec", "policyName")
        for b in bodies
        if b.get("kind") == "ValidatingAdmissionPolicyBinding"
        and "Deny" in (dig(b, "spec", "validationActions") or [])
        and not dig(b, "spec", "paramRef")
    }
    return [
        Policy(b["metadata"]["name"], b.get("spec") or {})
        for b in bodies
        if b.get("kind") == "ValidatingAdmissionPolicy" and b["metadata"]["name"] in denied
    ]
