"""The API server's built-in admission plugins that admission.py and cluster.py leave out (Kubernetes v1.35).

- ResourceQuota (always on), object counts: an object created in a namespace whose quota bounds
  `count/<resource>[.<group>]` or a legacy name (`services`, `services.loadbalancers`,
  `services.nodeports`, `configmaps`, `secrets`, `replicationcontrollers`, `resourcequotas`) is refused
  when its usage beside what the namespace already holds exceeds `hard`: the objects applied so far,
  the ConfigMap kube-root-ca.crt and the ServiceAccount `default` every namespace has, and the Secrets
  the namespace's ExternalSecrets and Certificates make. A Service counts one `services.loadbalancers`
  if it is a LoadBalancer, and `services.nodeports` one per port if a NodePort or LoadBalancer (with
  allocateLoadBalancerNodePorts false, only the ports that name a nodePort). Re-applying an object is
  charged its increase only. Source: staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota
  (controller.go checkRequest: RemoveZeros, the `exceeded quota` message), pkg/quota/v1/evaluator/core
  (services.go Usage, the object count evaluators).
- RuntimeClass (on by default), for the RuntimeClasses applied so far: its `scheduling.nodeSelector`
  conflicting with the pod's, a pod's own `overhead` unequal to the RuntimeClass's, or set where the
  RuntimeClass defines none (or the pod names none). Its scheduling tolerations count for
  PodTolerationRestriction below. Source: plugin/pkg/admission/runtimeclass/admission.go. The GPU
  Operator's RuntimeClasses (v26.7.0 assets/pre-requisites, controllers/object_controls.go
  transformRuntimeClass) carry a name and a handler only, no scheduling and no overhead.
- PodTolerationRestriction (when `--enable-admission-plugins` names it): on create, the namespace's
  `defaultTolerations` (or the plugin's cluster default from the admission configuration file) and, for
  a pod that is not BestEffort, `node.kubernetes.io/memory-pressure:NoSchedule` are merged into the
  pod's tolerations (as its controller made them, Kueue's injected ones and DefaultTolerationSeconds'
  included, then the RuntimeClass's); each must be covered by an entry of the namespace's
  `tolerationsWhitelist` (or, without the annotation, the cluster whitelist). Source:
  plugin/pkg/admission/podtolerationrestriction/admission.go, pkg/util/tolerations (check/tolerations.py).

Not modelled: pods and claims against object counts (admission.py's `quota_blocker` and
`claim_quota_blocker` judge `pods` and `persistentvolumeclaims`; `count/pods`,
`count/persistentvolumeclaims` and the objects controllers make, such as a Deployment's ReplicaSet, are
not counted), quota scopes (a scoped quota bounds pods only), a quota whose status the quota controller
has not computed yet (the API server refuses with `status unknown for quota`), the order of ResourceQuota
after the ValidatingAdmissionPolicies and webhooks (the API server runs it last; here it runs with the
other refusals, before admission.py's), a Secret an ExternalSecret or Certificate makes is counted from
the moment its maker is applied, the RuntimeClass's nodeSelector and tolerations in placement
(scheduling.py places by the template's own), a plugin configuration given by `path`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from constructs.namespaces import TOLERATIONS_WHITELIST
from sitegen.check.bringup.kube import add, added_by_the_plugin, made_secret, quantity
from sitegen.check.bringup.objects import ClusterObjects, Workload, key_of
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.check.tolerations import Toleration, merge, whitelist_admits
from sitegen.tree.fields import dig

DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
TOLERATION_RESTRICTION = "PodTolerationRestriction"

# ---- ResourceQuota: object counts ----------------------------------------------------------------
# Legacy quota names of object counts (pkg/quota/v1/evaluator/core), beside count/<resource>
_LEGACY = {
    ("", "ConfigMap"): "configmaps",
    ("", "Secret"): "secrets",
    ("", "ReplicationController"): "replicationcontrollers",
    ("", "ResourceQuota"): "resourcequotas",
    ("", "Service"): "services",
}
# What every namespace holds without dist/: the root CA publisher's ConfigMap, the default ServiceAccount
_SYSTEM = {("", "ConfigMap"): "kube-root-ca.crt", ("", "ServiceAccount"): "default"}
_ELSEWHERE = {("", "Pod"), ("", "PersistentVolumeClaim")}  # admission.py's quota checks


def quota_usage(body: Mapping[str, Any], resource: str) -> dict[str, int]:
    """What one object charges a ResourceQuota (`resource`: its plural, as the API serves it)."""
    group, kind, _, _ = key_of(body)
    usage = {f"count/{resource}.{group}" if group else f"count/{resource}": 1}
    legacy = _LEGACY.get((group, kind))
    if legacy:
        usage[legacy] = 1
    if (group, kind) == ("", "Service"):
        spec = body.get("spec") or {}
        ports = spec.get("ports") or []
        kind_of_service = spec.get("type", "ClusterIP")
        node_ports = 0
        if kind_of_service == "NodePort":
            node_ports = len(ports)
        elif kind_of_service == "LoadBalancer":
            explicit = spec.get("allocateLoadBalancerNodePorts") is False
            node_ports = sum(1 for p in ports if p.get("nodePort")) if explicit else len(ports)
        usage["services.loadbalancers"] = int(kind_of_service == "LoadBalancer")
        usage["services.nodeports"] = node_ports
    return usage


def _namespace_usage(body: Mapping[str, Any], resource: str, cluster: ClusterObjects) -> dict[str, int]:
    """What the namespace's objects of the same kind charge already (the object itself left out)."""
    key = key_of(body)
    group, kind, namespace, _ = key
    used: dict[str, int] = {}
    for other, applied in cluster.of_kind(kind):
        if other[0] == group and other[2] == namespace and other != key:
            add(used, quota_usage(applied.body, resource))
    system = _SYSTEM.get((group, kind))
    if system and key[3] != system and cluster.find(kind, namespace, system) is None:
        add(used, quota_usage({"apiVersion": "v1", "kind": kind, "metadata": {"name": system}}, resource))
    if (group, kind) == ("", "Secret"):  # with those its ExternalSecrets and Certificates make
        made = {m[1] for a in cluster.objects.values() if (m := made_secret(a.body)) and m[0] == namespace}
        count = len(made - {key[3]})
        used.update({"count/secrets": count, "secrets": count})
    return used


def _listed(values: Mapping[str, Any], names: list[str]) -> str:
    return ",".join(f"{name}={values.get(name, 0)}" for name in names)


def object_count_refusal(body: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    """ResourceQuota's checkRequest for objects other than pods and claims."""
    group, kind, namespace, name = key_of(body)
    if not namespace or (group, kind) in _ELSEWHERE:
        return None
    quotas = sorted(
        (a.body for k, a in cluster.of_kind("ResourceQuota") if k[2] == namespace and k[0] == ""),
        key=lambda q: q["metadata"]["name"],
    )
    if not quotas:
        return None
    resource = cluster.resource_name(group, kind)
    delta = quota_usage(body, resource)
    old = cluster.objects.get(key_of(body))
    if old is not None:  # an update is charged what it adds
        add(delta, quota_usage(old.body, resource), -1)
    delta = {k: v for k, v in delta.items() if v > 0}
    used: dict[str, int] | None = None
    for quota in quotas:
        spec = quota.get("spec") or {}
        if spec.get("scopes") or spec.get("scopeSelector"):
            continue
        hard = spec.get("hard") or {}
        requested = {k: v for k, v in delta.items() if k in hard}
        if not requested:
            continue
        used = _namespace_usage(body, resource, cluster) if used is None else used
        exceeded = sorted(k for k, v in requested.items() if used.get(k, 0) + v > quantity(hard[k]))
        if exceeded:
            what = f"{resource}.{group}" if group else resource
            return (
                f'{what} "{name}" is forbidden: exceeded quota: {quota["metadata"]["name"]}, '
                f"requested: {_listed(requested, exceeded)}, used: {_listed(used, exceeded)}, "
                f"limited: {','.join(f'{k}={hard[k]}' for k in exceeded)}"
            )
    return None


# ---- RuntimeClass --------------------------------------------------------------------------------
def _runtime_class(spec: Mapping[str, Any], cluster: ClusterObjects) -> Mapping[str, Any] | None:
    """The RuntimeClass the pod names, when it is an object applied (the GPU Operator's own have neither
    scheduling nor overhead: nothing to judge; cluster.py refuses a name nothing makes)."""
    name = spec.get("runtimeClassName")
    found = cluster.find("RuntimeClass", "", str(name)) if name else None
    return found.body if found is not None else None


def _same_resources(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Semantic equality of two resource lists (quantities compared by value)."""
    return a.keys() == b.keys() and all(quantity(a[k], milli=True) == quantity(b[k], milli=True) for k in a)


def runtime_class_refusal(w: Workload, cluster: ClusterObjects) -> str | None:
    """The RuntimeClass plugin's Admit (setOverhead, setScheduling) and Validate (validateOverhead)."""
    spec = w.template.spec
    runtime = _runtime_class(spec, cluster)
    overhead = spec.get("overhead") or {}
    fixed = dig(runtime, "overhead", "podFixed")
    if overhead and fixed is None:
        return "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
    if overhead and fixed is not None and not _same_resources(overhead, fixed):
        return "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
    selector = spec.get("nodeSelector") or {}
    wanted = dig(runtime, "scheduling", "nodeSelector") or {}
    for label, value in sorted(wanted.items()):
        if label in selector and str(selector[label]) != str(value):
            return (
                f"conflict: runtimeClass.scheduling.nodeSelector[{label}] = {value}; "
                f"pod.spec.nodeSelector[{label}] = {selector[label]}"
            )
    return None


# ---- PodTolerationRestriction --------------------------------------------------------------------
@cache
def _parsed(raw: str) -> tuple[Toleration, ...]:
    return tuple(json.loads(raw)) if raw else ()


def _namespace_tolerations(
    cluster: ClusterObjects, namespace: str, annotation: str
) -> tuple[Toleration, ...] | None:
    """The namespace's annotation as tolerations; None without the annotation (the cluster's apply)."""
    applied = cluster.find("Namespace", "", namespace)
    annotations = (dig(applied.body, "metadata", "annotations") or {}) if applied else {}
    return None if annotation not in annotations else _parsed(str(annotations[annotation]))


def admitted_tolerations(w: Workload, cluster: ClusterObjects) -> list[Toleration]:
    """The pod's tolerations once admission mutated it: its controller's and DefaultTolerationSeconds'
    (`PodTemplate.tolerations`), PodTolerationRestriction's merge, then the RuntimeClass's."""
    t = w.template
    config = cluster.plugin_configs.get(TOLERATION_RESTRICTION) or {}
    extra = _namespace_tolerations(cluster, t.namespace, DEFAULT_TOLERATIONS)
    extra = list(config.get("default") or []) if extra is None else list(extra)
    extra += added_by_the_plugin(t.spec)
    tolerations = merge(t.tolerations, extra) if extra else list(t.tolerations)
    runtime = dig(_runtime_class(t.spec, cluster), "scheduling", "tolerations") or []
    return merge(tolerations, runtime) if runtime else tolerations


def toleration_refusal(w: Workload, cluster: ClusterObjects) -> str | None:
    """PodTolerationRestriction's Validate: every toleration of the pod covered by the whitelist."""
    if TOLERATION_RESTRICTION not in cluster.admission_plugins:
        return None
    try:
        whitelist = _namespace_tolerations(cluster, w.template.namespace, TOLERATIONS_WHITELIST)
        tolerations = admitted_tolerations(w, cluster)
    except json.JSONDecodeError as error:
        return f"namespace {w.template.namespace}: an annotation of tolerations is no JSON: {error}"
    scope = "namespace"
    if whitelist is None:
        config = cluster.plugin_configs.get(TOLERATION_RESTRICTION) or {}
        whitelist, scope = tuple(config.get("whitelist") or ()), "cluster"
    for toleration in tolerations if whitelist else ():
        if not whitelist_admits(whitelist, toleration):
            shown = {k: v for k, v in toleration.items() if v not in (None, "")}
            return (
                f"pod tolerations (possibly merged with namespace default tolerations) conflict with its "
                f"{scope} whitelist: none of it covers {json.dumps(shown, sort_keys=True)}"
            )
    return None


ON_CREATE: tuple[CreateCheck, ...] = (object_count_refusal,)
ON_POD: tuple[PodCheck, ...] = (runtime_class_refusal, toleration_refusal)
