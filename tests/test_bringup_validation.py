"""The API server's validation on create (refusals/validation.py): each class of defect put back into a
copy of the committed tree is refused with the app, the object and the API server's reason; valid
alternatives of the same fields still come up. The rules themselves are proven on small objects."""

from __future__ import annotations

import copy

import pytest

from sitegen.check.bringup import bringup, timeline
from sitegen.check.bringup.kube import pod_template
from sitegen.check.bringup.objects import Workload
from sitegen.check.bringup.refusals.cron import cron_error, time_zone_error
from sitegen.check.bringup.refusals.formats import label_key_errors, label_value_errors, port_name_errors
from sitegen.check.bringup.refusals.validation import errors_of, invalid_on_create, statefulset_pods_invalid

from .bringup_cases import ONE, blocked, edited

METRICS = "one-cluster/apps/ai/metrics-server/kube-system"
DEPLOYMENT = f"{METRICS}.deployment.metrics-server"
BACKUP = "one-cluster/apps/ai/etcd-backup/etcd-backup.cronjob.etcd-backup.yaml"


def _first_install(site, inputs, tree):
    """The first install only: day 2 creates nothing the API server would validate differently."""
    return bringup(site, ONE, tree, inputs[ONE][1], day2=False)


def _container(doc):
    return doc["spec"]["template"]["spec"]["containers"][0]


def _deployment(inputs, change):
    return edited(inputs, ONE, DEPLOYMENT, lambda doc: change(doc) if doc["kind"] == "Deployment" else None)


# --- 1. ports and their names ---------------------------------------------------------------------------


def test_a_container_port_name_that_is_no_iana_service_name(site, inputs):
    tree = _deployment(inputs, lambda doc: _container(doc)["ports"][0].update(name="HTTPS"))
    blocked(
        _first_install(site, inputs, tree), "ai-metrics-server", "Deployment kube-system/metrics-server",
        'Deployment.apps "metrics-server" is invalid',
        'spec.template.spec.containers[0].ports[0].name: Invalid value: "HTTPS": must contain at least one letter (a-z)',
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("https", False), ("metrics-http", False), ("h2c", False), ("p8443", False),
        ("HTTPS", True), ("8443", True), ("metrics-https-01", True), ("-web", True), ("web--ui", True), ("w_b", True),
    ],
)  # fmt: skip
def test_port_names_are_iana_service_names(name, refused):
    assert bool(port_name_errors(name)) is refused


def _pod(ports, **resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "ports": ports, "resources": resources}]}}  # fmt: skip


def test_container_ports_range_and_names_unique_per_container():
    assert errors_of(_pod([{"containerPort": 65535, "hostPort": 1}])) == []
    assert errors_of(_pod([{"containerPort": 65536}])) == [
        "spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive"
    ]
    assert errors_of(_pod([{"containerPort": 80, "hostPort": 70000}]))[0].startswith(
        "spec.containers[0].ports[0].hostPort: Invalid value: 70000"
    )
    twice = [{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}]
    assert errors_of(_pod(twice)) == ['spec.containers[0].ports[1].name: Duplicate value: "web"']
    # the same name in two containers is only a warning of the API server
    pod = _pod([{"containerPort": 80, "name": "web"}])
    pod["spec"]["containers"].append({"name": "d", "ports": [{"containerPort": 81, "name": "web"}]})
    assert errors_of(pod) == []


def test_volumes_have_unique_label_names_and_at_most_one_source():
    """A volume with no source, or only null ones (`emptyDir:` left empty by a chart), is defaulted to an
    emptyDir before validation and accepted; two sources are refused, as are bad or repeated names."""

    def pod(*volumes):
        return {**_pod([]), "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)}}

    assert errors_of(pod({"name": "a", "emptyDir": None}, {"name": "b", "secret": None})) == []
    assert errors_of(pod({"name": "a", "emptyDir": {}, "secret": {"secretName": "s"}})) == [
        "spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type"
    ]
    assert errors_of(pod({"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}})) == [
        'spec.volumes[1].name: Duplicate value: "a"'
    ]
    assert errors_of(pod({"name": "Certs", "emptyDir": {}}))[0].startswith(
        'spec.volumes[0].name: Invalid value: "Certs": a lowercase RFC 1123 label'
    )
    assert errors_of(pod({"emptyDir": {}})) == ["spec.volumes[0].name: Required value"]


def _service(*ports, **spec):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": list(ports), **spec},
    }


def test_service_ports():
    # one unnamed port, targetPort omitted or a name: the API server defaults and accepts them
    assert errors_of(_service({"port": 80})) == []
    assert errors_of(_service({"port": 443, "targetPort": "https"})) == []
    assert errors_of(_service({"port": 80, "name": "a"}, {"port": 81, "name": "b", "targetPort": 8081})) == []
    assert errors_of(_service(clusterIP="None")) == []
    assert errors_of(_service(type="NodePort", ports=[{"port": 80, "nodePort": 30080}])) == []
    assert errors_of(_service()) == ["spec.ports: Required value"]
    assert errors_of(_service({"port": 80}, {"port": 81})) == [
        "spec.ports[0].name: Required value", "spec.ports[1].name: Required value",
    ]  # fmt: skip
    assert errors_of(_service({"port": 80, "name": "a"}, {"port": 81, "name": "a"})) == [
        'spec.ports[1].name: Duplicate value: "a"'
    ]
    assert errors_of(_service({"port": 80, "targetPort": "8080"})) == [
        'spec.ports[0].targetPort: Invalid value: "8080": must contain at least one letter (a-z)'
    ]
    assert errors_of(_service({"port": 0})) == [
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"
    ]
    assert errors_of(_service({"port": 80, "nodePort": 30080})) == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    ]
    assert (
        "not in the valid range"
        in errors_of(_service(type="NodePort", ports=[{"port": 80, "nodePort": 80}]))[0]
    )


# --- 2. labels ------------------------------------------------------------------------------------------


def test_a_label_value_the_api_server_refuses(site, inputs):
    def change(doc):
        doc["metadata"]["labels"]["app.kubernetes.io/version"] = "0.8.1+build"

    tree = edited(inputs, ONE, f"{METRICS}.service.metrics-server", change)
    blocked(
        _first_install(site, inputs, tree), "ai-metrics-server", "Service kube-system/metrics-server",
        'Service "metrics-server" is invalid: metadata.labels: Invalid value: "0.8.1+build": a valid label must be',
    )  # fmt: skip


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        ("app", False), ("app.kubernetes.io/name", False), ("sitegen.io/wave", False), ("A_b.c", False),
        ("-app", True), ("app/", True), ("/app", True), ("a/b/c", True), ("Example.com/app", True),
        ("x" * 64, True), ("x" * 63, False), ("a" * 251 + ".io/app", True), ("a" * 250 + ".io/app", False),
    ],
)  # fmt: skip
def test_label_keys(key, refused):
    assert bool(label_key_errors(key)) is refused


@pytest.mark.parametrize(
    ("value", "refused"),
    [("", False), ("v0.8.1", False), ("my_value", False), ("x" * 63, False),
     ("x" * 64, True), ("-a", True), ("a.", True), ("a b", True), ("0.8.1+build", True)],
)  # fmt: skip
def test_label_values(value, refused):
    assert bool(label_value_errors(value)) is refused


def test_template_and_selector_labels_are_validated():
    pod = _pod([])
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web app"]}]},
            "template": {"metadata": {"labels": {"app": "d", "tier": "web app"}}, "spec": pod["spec"]}},
    }  # fmt: skip
    found = errors_of(deployment)
    assert found[0].startswith('spec.selector.matchExpressions[0].values[0]: Invalid value: "web app"')
    assert found[1].startswith('spec.template.labels: Invalid value: "web app"')
    # a custom resource's labels are validated too
    assert errors_of(
        {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {"a": "b "}}}
    )


# --- 3. requests against limits -------------------------------------------------------------------------


def test_a_request_above_its_limit(site, inputs):
    tree = _deployment(inputs, lambda doc: _container(doc)["resources"]["requests"].update(memory="2Gi"))
    blocked(
        _first_install(site, inputs, tree), "ai-metrics-server", "Deployment kube-system/metrics-server",
        'spec.template.spec.containers[0].resources.requests: Invalid value: "2Gi": '
        "must be less than or equal to memory limit of 1Gi",
    )  # fmt: skip


def test_extended_resources_and_hugepages_are_not_overcommitted():
    def found(**resources):
        return errors_of(_pod([], **resources))

    path = "spec.containers[0].resources"
    assert found(requests={"cpu": "500m"}, limits={"cpu": "1"}) == []
    assert found(limits={"nvidia.com/gpu": 2}) == []  # the request defaults to the limit
    assert (
        found(requests={"nvidia.com/gpu": 8, "rdma/ib": 1}, limits={"nvidia.com/gpu": 8, "rdma/ib": 1}) == []
    )
    assert found(requests={"nvidia.com/gpu": 1}, limits={"nvidia.com/gpu": 2}) == [
        f'{path}.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'
    ]
    assert found(requests={"rdma/ib": 1}) == [
        f"{path}.limits: Required value: Limit must be set for non overcommitable resources"
    ]
    assert found(limits={"nvidia.com/gpu": "500m"}) == [
        f'{path}.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer'
    ]
    assert found(limits={"hugepages-2Mi": "4Mi", "memory": "1Gi"}) == []
    assert found(limits={"hugepages-2Mi": "3Mi", "memory": "1Gi"})[0].endswith(
        "3Mi is not positive integer multiple of hugepages-2Mi"
    )
    assert found(limits={"hugepages-2Mi": "4Mi"}) == [f"{path}: Forbidden: HugePages require cpu or memory"]


# --- 4. PodDisruptionBudgets ----------------------------------------------------------------------------


def test_a_budget_with_both_fields(site, inputs):
    tree = edited(
        inputs, ONE, f"{METRICS}.poddisruptionbudget", lambda doc: doc["spec"].update(maxUnavailable=1)
    )
    blocked(
        _first_install(site, inputs, tree), "ai-metrics-server", "PodDisruptionBudget kube-system/metrics-server",
        'PodDisruptionBudget.policy "metrics-server" is invalid: spec: Invalid value: policy.PodDisruptionBudgetSpec',
        "minAvailable and maxUnavailable cannot be both set",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "reason"),
    [({"maxUnavailable": "100%"}, None), ({"minAvailable": 0}, None), ({"minAvailable": "50%"}, None),
     ({"minAvailable": -1}, "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"),
     ({"maxUnavailable": "101%"}, "spec.maxUnavailable: Invalid value: 101%: must not be greater than 100%"),
     ({"maxUnavailable": "half"}, "spec.maxUnavailable: Invalid value: half: a valid percent string")],
)  # fmt: skip
def test_budget_values(spec, reason):
    found = errors_of(
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": spec}
    )
    assert found[0].startswith(reason) if reason else found == [], found


# --- 5. CronJobs ----------------------------------------------------------------------------------------


def test_a_time_zone_the_api_server_does_not_know(site, inputs):
    tree = edited(inputs, ONE, BACKUP, lambda doc: doc["spec"].update(timeZone="Europe/Pariss"))
    blocked(
        _first_install(site, inputs, tree), "ai-etcd-backup", "CronJob etcd-backup/etcd-backup",
        'CronJob.batch "etcd-backup" is invalid: spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss',
    )  # fmt: skip


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        ("0 0 1 1 *", None), ("*/5 * * * *", None), ("15 */12 * * SUN-SAT", None), ("0 3 * JAN,JUL 1/2", None),
        ("@hourly", None), ("@every 90m", None), ("0 0 ? * *", None),
        ("0 30 1 * * *", "expected exactly 5 fields, found 6: [0 30 1 * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
        ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ],
)  # fmt: skip
def test_schedules_as_robfig_cron_parses_them(schedule, reason):
    assert cron_error(schedule) == reason


def test_time_zones_and_the_rest_of_a_cronjob():
    assert time_zone_error("Etc/UTC") is None and time_zone_error("Asia/Kolkata") is None
    assert time_zone_error("Local") and time_zone_error("Mars/Olympus") and time_zone_error("../etc/passwd")
    job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {
        "schedule": "CRON_TZ=UTC 0 * * * *", "startingDeadlineSeconds": -1, "jobTemplate": {"spec": {}}}}  # fmt: skip
    assert errors_of(job) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead',
        "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
    ]
    job["spec"] = {"schedule": "@daily", "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}}}}
    job["metadata"]["name"] = "n" * 53
    assert [e.split(":")[0] for e in errors_of(job)] == ["spec.jobTemplate.spec.selector", "metadata.name"]


# --- 6. selectors against templates ---------------------------------------------------------------------


def test_a_selector_that_does_not_match_its_template(site, inputs):
    tree = _deployment(inputs, lambda doc: doc["spec"]["template"]["metadata"]["labels"].update(
        {"app.kubernetes.io/instance": "metrics"}))  # fmt: skip
    blocked(
        _first_install(site, inputs, tree), "ai-metrics-server", "Deployment kube-system/metrics-server",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app.kubernetes.io/instance":"metrics", '
        '"app.kubernetes.io/name":"metrics-server"}: `selector` does not match template `labels`',
    )  # fmt: skip


def _workload(kind, selector, labels, **spec):
    group = "batch" if kind == "Job" else "apps"
    body = {"apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {}}, **spec}}  # fmt: skip
    if selector is not None:
        body["spec"]["selector"] = selector
    return body


def test_selectors_of_each_workload_kind():
    app = {"matchLabels": {"app": "w"}}
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        assert errors_of(_workload(kind, app, {"app": "w", "extra": "x"})) == []
        assert (
            errors_of(
                _workload(kind, {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": "w"})
            )
            == []
        )
        assert errors_of(_workload(kind, app, {"app": "v"}))[-1].endswith(
            "`selector` does not match template `labels`"
        )
    # as the API server answers it: nil selects nothing, so it matches no template either
    assert errors_of(_workload("Deployment", None, {"app": "w"})) == [
        "spec.selector: Required value",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"w"}: '
        "`selector` does not match template `labels`",
    ]
    assert errors_of(_workload("StatefulSet", {}, {"app": "w"}))[0].endswith(
        "empty selector is invalid for statefulset"
    )
    assert errors_of(_workload("DaemonSet", None, {"app": "w"}))[0].endswith(
        "`selector` does not match template `labels`"
    )
    # a Job's selector: manual, it must match; generated, one written in Git is refused
    assert errors_of(_workload("Job", None, {"app": "w"})) == []
    assert errors_of(_workload("Job", app, {"app": "w"}, manualSelector=True)) == []
    assert errors_of(_workload("Job", None, {"app": "w"}, manualSelector=True)) == [
        "spec.selector: Required value"
    ]
    assert errors_of(_workload("Job", app, {"app": "v"}, manualSelector=True))[0].endswith(
        "does not match template `labels`"
    )
    assert errors_of(_workload("Job", app, {"app": "w"}))[0].endswith("`selector` not auto-generated")
    # a Service's selector selects nothing at validation
    assert errors_of(_service({"port": 80}, selector={"app": "nothing-has-it"})) == []


def test_a_statefulsets_pods_are_refused_not_the_statefulset():
    body = _workload("StatefulSet", {"matchLabels": {"app": "w"}}, {"app": "w"})
    body["metadata"]["namespace"] = "ns"
    body["spec"]["template"]["spec"] = {"containers": [{"name": "c", "ports": [{"containerPort": 0}]}]}
    assert invalid_on_create(body, None) is None  # type: ignore[arg-type]
    refused = statefulset_pods_invalid(Workload(pod_template(body), "app"), None)  # type: ignore[arg-type]
    assert refused == (
        'create Pod w-0 in StatefulSet w failed error: Pod "w-0" is invalid: '
        "spec.containers[0].ports[0].containerPort: Required value"
    )


def test_a_statefulset_whose_pods_the_api_server_refuses(site, inputs):
    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/loki/loki.statefulset.loki-write",
        lambda doc: _container(doc)["ports"][0].update(containerPort=0),
    )  # fmt: skip
    blocked(
        _first_install(site, inputs, tree), "ai-loki", "StatefulSet loki/loki-write",
        'create Pod loki-write-0 in StatefulSet loki-write failed error: Pod "loki-write-0" is invalid: '
        "spec.containers[0].ports[0].containerPort: Required value",
    )  # fmt: skip


# --- harmless alternatives, all in one bring-up ----------------------------------------------------------


def _also(tree, where, change):
    """`tree` with the documents of the files under `where` copied and edited by `change`."""
    for path in [p for p in tree if str(p).startswith(where)]:
        tree[path] = copy.deepcopy(tree[path])
        for doc in tree[path]:
            change(doc)
    return tree


def test_valid_alternatives_of_the_same_fields_come_up(site, inputs):
    def deployment(doc):
        container = _container(doc)
        container["ports"][0]["name"] = "metrics-tls"
        for probe in ("livenessProbe", "readinessProbe"):
            container[probe]["httpGet"]["port"] = "metrics-tls"
        container["resources"]["requests"]["memory"] = "1Gi"  # equal to its limit
        doc["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "metrics-server"}, "matchExpressions": [
            {"key": "app.kubernetes.io/instance", "operator": "In", "values": ["metrics-server"]}]}  # fmt: skip
        doc["spec"]["template"]["metadata"]["labels"]["sitegen.io/extra"] = ""

    def service(doc):
        doc["metadata"]["labels"]["app.kubernetes.io/version"] = "0.8.1_build-7"
        doc["spec"]["ports"][0]["targetPort"] = 10250

    def budget(doc):
        doc["spec"].pop("minAvailable")
        doc["spec"]["maxUnavailable"] = "50%"

    tree = _also(dict(inputs[ONE][0]), DEPLOYMENT, deployment)
    _also(tree, f"{METRICS}.service.metrics-server", service)
    _also(tree, f"{METRICS}.poddisruptionbudget", budget)
    _also(tree, BACKUP, lambda doc: doc["spec"].update(timeZone="Europe/Paris", schedule="@daily"))
    result = _first_install(site, inputs, tree)
    assert result.ok, timeline(result)
