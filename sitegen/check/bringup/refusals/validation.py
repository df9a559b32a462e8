"""The API server's validation of an object on create (Kubernetes v1.35: pkg/apis/core/validation,
apps/validation, batch/validation, policy/validation; formats from apimachinery's api/validate/content;
reasons as field.Error prints them, `<Kind>.<group> "<name>" is invalid: ...`). The formats and label
validation it uses are in formats.py, the CronJob schedule parser in cron.py.

Modelled, one pass over the object:
- ObjectMeta: label keys (optional DNS-1123 subdomain prefix <= 253, name part <= 63) and values (<= 63,
  `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`) of every object, custom resources included.
- Pod templates (Pod, Deployment, ReplicaSet, DaemonSet, Job, CronJob): their labels, and per container
  (init containers too) its ports (containerPort and hostPort 1-65535, names IANA_SVC_NAME and unique
  within the container: a name repeated across containers is only a warning) and resources (a request
  above its limit; extended resources and hugepages are not overcommittable: request equal to limit,
  a request needs a limit; extended resources whole numbers; hugepages multiples of their page size and
  only beside cpu or memory). A StatefulSet's pod spec is not validated on create (apps/validation only
  checks its template's labels): its pods are refused when its controller creates them (ON_POD).
- Selectors: apps/v1 Deployment, ReplicaSet and StatefulSet need a non-empty `spec.selector`, a
  DaemonSet's may not be empty either; each must match its template's labels (a missing one matches
  nothing); a Job's with manualSelector likewise, without it the selector is generated (one written in
  Git may select only the generated labels); a CronJob's job template may not carry one. Selector keys,
  values and operators are validated; a Service's selector only as labels (nothing compares it).
- Services: ports required unless headless or ExternalName, names (DNS-1123 labels) required when more
  than one and unique, port 1-65535, protocol, targetPort (1-65535 or IANA_SVC_NAME; 0 and "" default to
  the port), (protocol, port) and (protocol, nodePort) unique, nodePort forbidden for ClusterIP and
  within the allocator's default --service-node-port-range (30000-32767; the kubeadm configuration here
  sets none).
- PodDisruptionBudget: minAvailable and maxUnavailable exclusive, each a non-negative int or a percent
  up to 100%, its selector.
- CronJob: schedule as robfig/cron v3's ParseStandard parses it (5 fields or a descriptor), no TZ or
  CRON_TZ in it on create, timeZone a name of the tz database (Python's zoneinfo stands for the tzdata
  the API server's Go runtime loads), startingDeadlineSeconds >= 0, a name of at most 52 characters.

- Volumes of a pod spec: names (DNS-1123 labels, unique) and at most one source each (one with none,
  or only sources set to null, becomes an emptyDir: the defaults run first).

Not modelled: the rest of the pod spec (volume sources' own fields, probes, security contexts, env), names of objects,
annotations, quantities printed in Go's canonical form (they are printed as written), a hostNetwork
pod's hostPort defaulting, Service IP families and cluster IPs, and validation of other API groups.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sitegen.check.bringup.kube import group_of, quantity
from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.cron import cron_error, time_zone_error
from sitegen.check.bringup.refusals.formats import (
    dns_label_errors,
    go_map,
    go_value,
    invalid,
    labels_errors,
    port_name_errors,
    port_number_errors,
    selector_errors,
    selector_text,
    selects,
)
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.tree.fields import dig

# --- containers --------------------------------------------------------------------------------------


def _protocol(port: Mapping[str, Any], path: str) -> list[str]:
    if port.get("protocol", "TCP") in ("SCTP", "TCP", "UDP"):
        return []
    return [
        f'{path}: Unsupported value: {go_value(port["protocol"])}: supported values: "SCTP", "TCP", "UDP"'
    ]


def _ports(ports: Iterable[Mapping[str, Any]], path: str) -> list[str]:
    errors, names = [], set()
    for i, port in enumerate(ports):
        at, name = f"{path}[{i}]", port.get("name")
        if name:
            found = port_name_errors(str(name))
            errors += [invalid(f"{at}.name", go_value(str(name)), m) for m in found]
            if not found and name in names:
                errors.append(f"{at}.name: Duplicate value: {go_value(str(name))}")
            names.add(name)
        number = port.get("containerPort")
        errors += (
            [f"{at}.containerPort: Required value"]
            if not number
            else port_number_errors(number, f"{at}.containerPort")
        )
        if port.get("hostPort"):
            errors += port_number_errors(port["hostPort"], f"{at}.hostPort")
        errors += _protocol(port, f"{at}.protocol")
    return errors


def _native(name: str) -> bool:
    """helper.IsNativeResource: unprefixed, or in the kubernetes.io/ namespace."""
    return "/" not in name or "kubernetes.io/" in name


def _hugepage_errors(name: str, amount: Any, path: str) -> list[str]:
    try:
        page = quantity(name.removeprefix("hugepages-"))
    except ValueError:
        return []
    if page > 0 and quantity(amount) % page == 0:
        return []
    return [invalid(path, go_value(str(amount)), f"{amount} is not positive integer multiple of {name}")]


def _amount_errors(name: str, amount: Any, path: str) -> list[str]:
    if name.startswith("hugepages-"):
        return _hugepage_errors(name, amount, path)
    if not _native(name) and quantity(amount, milli=True) % 1000:  # extended resources count whole devices
        return [invalid(path, go_value(str(amount)), "must be an integer")]
    return []


def _resources(resources: Mapping[str, Any] | None, path: str) -> list[str]:
    """validateResourceRequirements: each request against its limit (helper.IsOvercommitAllowed)."""
    limits, requests = dig(resources, "limits") or {}, dig(resources, "requests") or {}
    errors = []
    try:
        for name, amount in limits.items():
            errors += _amount_errors(name, amount, f"{path}.limits[{name}]")
        for name, amount in requests.items():
            errors += _amount_errors(name, amount, f"{path}.requests[{name}]")
            overcommit = _native(name) and not name.startswith("hugepages-")
            if name not in limits:
                if not overcommit:
                    errors.append(
                        f"{path}.limits: Required value: Limit must be set for non overcommitable resources"
                    )
                continue
            asked, cap = quantity(amount, milli=True), quantity(limits[name], milli=True)
            if asked != cap and not overcommit:
                errors.append(
                    invalid(
                        f"{path}.requests",
                        go_value(str(amount)),
                        f"must be equal to {name} limit of {limits[name]}",
                    )
                )
            elif asked > cap:
                errors.append(
                    invalid(
                        f"{path}.requests",
                        go_value(str(amount)),
                        f"must be less than or equal to {name} limit of {limits[name]}",
                    )
                )
    except ValueError:  # not a quantity: the API server cannot decode it (not this check's refusal)
        return errors
    used = set(limits) | set(requests)
    if any(n.startswith("hugepages-") for n in used) and not used & {"cpu", "memory"}:
        errors.append(f"{path}: Forbidden: HugePages require cpu or memory")
    return errors


# core/v1 VolumeSource's members, in the order validateVolumeSource counts them; a member set to null is
# absent (the JSON decoder leaves the pointer nil), and a volume with none is defaulted to an emptyDir
# before validation (SetDefaults_Volume), so only more than one is refused
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
    "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "quobyte", "flexVolume", "cinder", "cephfs",
    "flocker", "downwardAPI", "fc", "azureFile", "vsphereVolume", "azureDisk", "photonPersistentDisk",
    "portworxVolume", "scaleIO", "configMap", "storageos", "projected", "csi", "ephemeral", "image",
)  # fmt: skip


def _volumes(volumes: Iterable[Mapping[str, Any]], path: str) -> list[str]:
    """ValidateVolumes: each a DNS-1123 label, unique, with at most one source."""
    errors: list[str] = []
    names: set[str] = set()
    for i, volume in enumerate(volumes):
        at, name = f"{path}[{i}]", str(volume.get("name") or "")
        if not name:
            errors.append(f"{at}.name: Required value")
        errors += [invalid(f"{at}.name", go_value(name), m) for m in dns_label_errors(name)] if name else []
        if name in names:
            errors.append(f"{at}.name: Duplicate value: {go_value(name)}")
        names.add(name)
        sources = [k for k in VOLUME_SOURCES if volume.get(k) is not None]
        if len(sources) > 1:
            errors.append(f"{at}.{sources[1]}: Forbidden: may not specify more than 1 volume type")
    return errors


def pod_spec_errors(spec: Mapping[str, Any], path: str) -> list[str]:
    errors = _volumes(spec.get("volumes") or [], f"{path}.volumes")
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            at = f"{path}.{field}[{i}]"
            errors += _ports(container.get("ports") or [], f"{at}.ports")
            errors += _resources(container.get("resources"), f"{at}.resources")
    return errors


def _template(template: Mapping[str, Any], path: str, *, pod_spec: bool = True) -> list[str]:
    """ValidatePodTemplateSpec: its labels under `<path>.labels`, then its pod spec."""
    errors = labels_errors(dig(template, "metadata", "labels"), f"{path}.labels")
    return errors + (pod_spec_errors(template.get("spec") or {}, f"{path}.spec") if pod_spec else [])


# --- workloads and their selectors (apps/validation, batch/validation) ---------------------------------


def _spec(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return body.get("spec") or {}


def _matches_template(
    selector: Mapping[str, Any] | None, template: Mapping[str, Any], path: str
) -> list[str]:
    labels = dig(template, "metadata", "labels") or {}
    if selects(selector, labels) is False:
        return [
            invalid(f"{path}.metadata.labels", go_map(labels), "`selector` does not match template `labels`")
        ]
    return []


def _replicated(body: Mapping[str, Any], word: str) -> list[str]:
    """Deployment, ReplicaSet, StatefulSet: a required, non-empty selector matching the template (whose
    pod spec a StatefulSet does not validate)."""
    spec, template = _spec(body), _spec(body).get("template") or {}
    selector = spec.get("selector")
    if selector is None:
        errors = ["spec.selector: Required value"]
    else:
        errors = selector_errors(selector, "spec.selector")
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            errors.append(
                invalid("spec.selector", selector_text(selector), f"empty selector is invalid for {word}")
            )
    # an empty selector matches everything: ValidatePodTemplateSpecFor* skips the comparison
    if selector is None or selector.get("matchLabels") or selector.get("matchExpressions"):
        errors += _matches_template(selector, template, "spec.template")
    return errors + _template(template, "spec.template", pod_spec=word != "statefulset")


def _daemonset(body: Mapping[str, Any]) -> list[str]:
    spec, template = _spec(body), _spec(body).get("template") or {}
    selector = spec.get("selector")
    errors = selector_errors(selector, "spec.selector") + _matches_template(
        selector, template, "spec.template"
    )
    if selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(
            invalid("spec.selector", selector_text(selector), "empty selector is invalid for daemonset")
        )
    return errors + _template(template, "spec.template")


_JOB_LABELS = ("job-name", "batch.kubernetes.io/job-name")
_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
_UID = "<uid>"  # the Job's UID: unknown before it is created, so no selector written in Git can name it


def _job(body: Mapping[str, Any]) -> list[str]:
    """A manual selector must match the template; otherwise the registry generates one (adding the
    controller-uid label to any the user wrote), which may select only the labels it generates."""
    spec, template = _spec(body), _spec(body).get("template") or {}
    selector = spec.get("selector")
    errors = _template(template, "spec.template")
    if spec.get("manualSelector") is True:
        if selector is None:
            return [*errors, "spec.selector: Required value"]
        return (
            errors
            + selector_errors(selector, "spec.selector")
            + _matches_template(selector, template, "spec.template")
        )
    if selector is None:
        return errors
    generated = {**selector, "matchLabels": {_UID_LABELS[1]: _UID, **(selector.get("matchLabels") or {})}}
    expected = {**dict.fromkeys(_JOB_LABELS, body["metadata"]["name"]), **dict.fromkeys(_UID_LABELS, _UID)}
    errors += selector_errors(selector, "spec.selector")
    if selects(generated, expected) is False:
        errors.append(invalid("spec.selector", selector_text(generated), "`selector` not auto-generated"))
    return errors


def _job_template(job: Mapping[str, Any], path: str) -> list[str]:
    """ValidateJobTemplateSpec: the CronJob controller generates each Job's selector."""
    spec = job.get("spec") or {}
    errors = _template(spec.get("template") or {}, f"{path}.spec.template")
    if spec.get("selector") is not None:
        errors.append(
            invalid(
                f"{path}.spec.selector", selector_text(spec["selector"]), "`selector` will be auto-generated"
            )
        )
    if spec.get("manualSelector") is True:
        errors.append(
            f'{path}.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"'
        )
    return errors


# --- CronJob (batch/validation) -------------------------------------------------------------------


def _cronjob(body: Mapping[str, Any]) -> list[str]:
    spec, errors = _spec(body), []
    schedule = spec.get("schedule")
    if not schedule:
        errors.append("spec.schedule: Required value")
    else:
        parsed = cron_error(str(schedule))
        errors += [invalid("spec.schedule", go_value(str(schedule)), parsed)] if parsed else []
        if "TZ" in str(schedule):
            errors.append(
                invalid(
                    "spec.schedule",
                    go_value(str(schedule)),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
            )
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int) and deadline < 0:
        errors.append(
            invalid("spec.startingDeadlineSeconds", str(deadline), "must be greater than or equal to 0")
        )
    if "timeZone" in spec and spec["timeZone"] is not None:
        zone = time_zone_error(str(spec["timeZone"]))
        errors += [invalid("spec.timeZone", go_value(str(spec["timeZone"])), zone)] if zone else []
    errors += _job_template(spec.get("jobTemplate") or {}, "spec.jobTemplate")
    name = body["metadata"]["name"]
    if len(name) > 52:  # the controller appends an 11-character suffix to each Job's name
        errors.append(invalid("metadata.name", go_value(name), "must be no more than 52 characters"))
    return errors


# --- Service (core/validation ValidateService; the registry's node-port allocator) ---------------------

_NODE_PORTS = (30000, 32767)  # kube-apiserver's default --service-node-port-range


def _target_port(value: Any, path: str) -> list[str]:
    if value in (None, 0, ""):  # defaulted to the port
        return []
    if isinstance(value, int):
        return port_number_errors(value, path)
    return [invalid(path, go_value(str(value)), m) for m in port_name_errors(str(value))]


def _service_port(port: Mapping[str, Any], path: str, *, named: bool, names: set[str]) -> list[str]:
    errors, name = [], port.get("name")
    if named and not name:
        errors.append(f"{path}.name: Required value")
    elif name:
        errors += [invalid(f"{path}.name", go_value(str(name)), m) for m in dns_label_errors(str(name))]
        errors += [f"{path}.name: Duplicate value: {go_value(str(name))}"] if name in names else []
        names.add(name)
    errors += port_number_errors(port.get("port", 0), f"{path}.port")
    errors += _protocol(port, f"{path}.protocol")
    return errors + _target_port(port.get("targetPort"), f"{path}.targetPort")


def _service(body: Mapping[str, Any]) -> list[str]:
    spec = _spec(body)
    kind, ports = spec.get("type", "ClusterIP"), list(spec.get("ports") or [])
    headless = spec.get("clusterIP") == "None" or (spec.get("clusterIPs") or [None])[0] == "None"
    errors = [] if ports or headless or kind == "ExternalName" else ["spec.ports: Required value"]
    names: set[str] = set()
    for i, port in enumerate(ports):
        errors += _service_port(port, f"spec.ports[{i}]", named=len(ports) > 1, names=names)
    errors += labels_errors(spec.get("selector"), "spec.selector")
    seen_ports: set[tuple[str, Any]] = set()
    seen_node_ports: set[tuple[str, Any]] = set()
    for i, port in enumerate(ports):
        protocol, node_port = port.get("protocol", "TCP"), port.get("nodePort")
        if node_port and kind == "ClusterIP":
            errors.append(f"spec.ports[{i}].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'")
        elif node_port and (protocol, node_port) in seen_node_ports:
            errors.append(f"spec.ports[{i}].nodePort: Duplicate value: {node_port}")
        elif node_port and not _NODE_PORTS[0] <= node_port <= _NODE_PORTS[1]:
            errors.append(
                invalid(
                    f"spec.ports[{i}].nodePort",
                    str(node_port),
                    "provided port is not in the valid range. The range of valid ports is {}-{}".format(
                        *_NODE_PORTS
                    ),
                )
            )
        seen_node_ports.add((protocol, node_port))
        if (protocol, port.get("port")) in seen_ports:
            errors.append(
                f'spec.ports[{i}]: Duplicate value: core.ServicePort{{Name:"", Protocol:{go_value(protocol)}, '
                f"AppProtocol:(*string)(nil), Port:{port.get('port')}, TargetPort:intstr.IntOrString{{Type:0, "
                'IntVal:0, StrVal:""}, NodePort:0}'
            )
        seen_ports.add((protocol, port.get("port")))
    return errors


# --- PodDisruptionBudget (policy/validation) -----------------------------------------------------------


def _int_or_percent(value: Any, path: str) -> list[str]:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent (apps/validation)."""
    if isinstance(value, int):
        return [invalid(path, str(value), "must be greater than or equal to 0")] if value < 0 else []
    text = str(value)
    if not re.fullmatch(r"[0-9]+%", text):
        return [invalid(path, text, "a valid percent string must be a numeric string followed by an ending '%' "
                         "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]  # fmt: skip
    return [invalid(path, text, "must not be greater than 100%")] if int(text[:-1]) > 100 else []


def _disruption_budget(body: Mapping[str, Any]) -> list[str]:
    spec, errors = _spec(body), []
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        errors.append(
            invalid(
                "spec",
                f"policy.PodDisruptionBudgetSpec{{MinAvailable:{low}, MaxUnavailable:{high}, ...}}",
                "minAvailable and maxUnavailable cannot be both set",
            )
        )
    for field, value in (("minAvailable", low), ("maxUnavailable", high)):
        errors += [] if value is None else _int_or_percent(value, f"spec.{field}")
    return errors + selector_errors(spec.get("selector"), "spec.selector")


def _pod(body: Mapping[str, Any]) -> list[str]:
    return pod_spec_errors(_spec(body), "spec")


# --- the checks ------------------------------------------------------------------------------------------

_BY_KIND = {
    ("", "Pod"): _pod,
    ("", "PodTemplate"): lambda body: _template(body.get("template") or {}, "template"),
    ("", "Service"): _service,
    ("apps", "Deployment"): lambda body: _replicated(body, "deployment"),
    ("apps", "ReplicaSet"): lambda body: _replicated(body, "deployment"),  # sic: the ReplicaSet's reason
    ("apps", "StatefulSet"): lambda body: _replicated(body, "statefulset"),
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("policy", "PodDisruptionBudget"): _disruption_budget,
}


def errors_of(body: Mapping[str, Any]) -> list[str]:
    """The field errors the API server's validation finds in `body` on create."""
    group, kind = group_of(body), str(body.get("kind"))
    errors = labels_errors(dig(body, "metadata", "labels"), "metadata.labels")
    check = _BY_KIND.get((group, kind))
    return errors + (check(body) if check else [])


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def invalid_on_create(body: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    errors = errors_of(body)
    if not errors:
        return None
    group, kind = group_of(body), str(body.get("kind"))
    return (
        f'{kind}{"." + group if group else ""} "{body["metadata"]["name"]}" is invalid: {_aggregate(errors)}'
    )


def statefulset_pods_invalid(workload: Workload, cluster: ClusterObjects) -> str | None:
    """The StatefulSet controller's pods meet the pod spec validation its own create skipped."""
    template = workload.template
    if template.kind != "StatefulSet":
        return None
    errors = pod_spec_errors(template.spec, "spec")
    if not errors:
        return None
    pod = f"{template.name}-0"
    return f'create Pod {pod} in StatefulSet {template.name} failed error: Pod "{pod}" is invalid: {_aggregate(errors)}'


ON_CREATE: tuple[CreateCheck, ...] = (invalid_on_create,)
ON_POD: tuple[PodCheck, ...] = (statefulset_pods_invalid,)
