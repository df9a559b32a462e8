"""The kubelet's probes and readiness gates (refusals/kubelet.py), and the Service port a webhook or an
APIService calls (refusals/wiring.py): each defect put back into a copy of the hydrated tree is named
with its app, object and reason; valid alternatives of the same fields still come up."""

from __future__ import annotations

from typing import Any

from sitegen.check.bringup.kube import PodTemplate
from sitegen.check.bringup.refusals.kubelet import gate_refusal, probe_refusal
from sitegen.check.bringup.refusals.wiring import unserved

from .bringup_cases import ONE, blocked, edited, run

AI = "one-cluster/apps/ai"
VELERO = f"{AI}/velero/velero.deployment.velero.yaml"
GRAFANA = f"{AI}/grafana/grafana.deployment.grafana.yaml"
METRICS_SERVICE = f"{AI}/metrics-server/kube-system.service.metrics-server.yaml"
ESO_SERVICE = f"{AI}/external-secrets/external-secrets.service.external-secrets-webhook.yaml"
KUEUE_SERVICE = f"{AI}/kueue/kueue-system.service.kueue-webhook-service.yaml"


def _pod(template: dict[str, Any]) -> dict[str, Any]:
    return template["spec"]["template"]["spec"]


def _container(doc: dict[str, Any]) -> dict[str, Any]:
    return _pod(doc)["containers"][0]


def _target(value: object):
    def change(doc):
        (port,) = doc["spec"]["ports"]
        port["targetPort"] = value

    return change


# --- probes: a port name the container does not declare --------------------------------------------

WEB = {"name": "web", "ports": [{"name": "http", "containerPort": 8080}]}


def _probed(field: str, port: object, container: dict[str, Any] = WEB) -> dict[str, Any]:
    return {"containers": [{**container, field: {"httpGet": {"path": "/", "port": port}}}]}


def test_a_probe_port_name_resolves_on_its_own_container_only():
    """pkg/probe/util.go: the name is looked up in that container's ports, then parsed as a number."""
    refused = probe_refusal(_probed("readinessProbe", "https"))
    assert refused is not None
    assert 'Readiness probe errored and resulted in unknown state: strconv.Atoi: parsing "https"' in refused
    assert "never becomes Ready" in refused
    assert probe_refusal(_probed("readinessProbe", "http")) is None
    assert probe_refusal(_probed("readinessProbe", 8443)) is None  # a number is probed as is
    assert probe_refusal(_probed("readinessProbe", "8443")) is None  # strconv.Atoi's last try
    # another container's port of that name does not count
    spec = _probed("readinessProbe", "admin")
    spec["containers"].append({"name": "side", "ports": [{"name": "admin", "containerPort": 9000}]})
    assert "container web: Readiness probe" in str(probe_refusal(spec))


def test_a_startup_probe_holds_the_container_and_a_liveness_probe_does_not():
    """worker.go: an errored probe's result is thrown away; startup stays Unknown (never started),
    liveness stays Success (the container runs on unchecked)."""
    assert "Startup probe errored" in str(probe_refusal(_probed("startupProbe", "https")))
    assert probe_refusal(_probed("livenessProbe", "https")) is None
    tcp = {"containers": [{**WEB, "readinessProbe": {"tcpSocket": {"port": "grpc"}}}]}
    assert 'parsing "grpc"' in str(probe_refusal(tcp))
    sidecar = {**WEB, "restartPolicy": "Always", "startupProbe": {"httpGet": {"port": "ready"}}}
    assert "container web: Startup" in str(probe_refusal({"initContainers": [sidecar], "containers": []}))


def test_a_readiness_probe_on_an_undeclared_port_name_keeps_the_app_progressing(site, inputs):
    def change(doc):
        _container(doc)["readinessProbe"]["httpGet"]["port"] = "monitoring"

    blocked(
        run(site, inputs, ONE, tree=edited(inputs, ONE, VELERO, change)),
        "ai-velero",
        "Deployment velero/velero",
        'container velero: Readiness probe errored and resulted in unknown state: strconv.Atoi: parsing "monitoring"',
    )


# --- readiness gates no controller sets -------------------------------------------------------------


def test_a_readiness_gate_is_unready_until_its_condition_is_set():
    refused = gate_refusal({"readinessGates": [{"conditionType": "target-health.elbv2.k8s.aws/tg"}]})
    assert (
        'corresponding condition of pod readiness gate "target-health.elbv2.k8s.aws/tg" does not exist.'
        in str(refused)
    )
    assert gate_refusal({"readinessGates": []}) is None


def test_a_readiness_gate_keeps_the_app_progressing(site, inputs):
    def change(doc):
        _pod(doc)["readinessGates"] = [{"conditionType": "target-health.elbv2.k8s.aws/velero"}]

    blocked(
        run(site, inputs, ONE, tree=edited(inputs, ONE, VELERO, change)),
        "ai-velero",
        "Deployment velero/velero",
        "ReadinessGatesNotReady",
        'readiness gate "target-health.elbv2.k8s.aws/velero" does not exist.',
    )


# --- the Service port a webhook or an APIService calls -----------------------------------------------


def _service(target: object = None, *, port: int = 443, protocol: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "https", "port": port}
    if target is not None:
        entry["targetPort"] = target
    if protocol:
        entry["protocol"] = protocol
    return {"metadata": {"namespace": "ns", "name": "hook"}, "spec": {"ports": [entry]}}


BACKEND = PodTemplate(
    "Deployment", "ns", "hook", 1, {},
    {"containers": [{"name": "manager", "ports": [{"name": "webhook", "containerPort": 9443}]}]},
)  # fmt: skip


def test_a_service_port_resolves_as_the_endpointslice_controller_finds_it():
    """pkg/api/v1/pod FindPort: a name among the containers' ports with the Service port's protocol;
    a number as is (declared: served; undeclared: served, noted as an assumption)."""
    assert unserved(_service("webhook"), 443, [BACKEND]) == (None, None)
    assert unserved(_service(9443), 443, [BACKEND]) == (None, None)
    missing, _ = unserved(_service("webhook"), 8443, [BACKEND])
    assert missing == 'service/hook in "ns" is not listening on port 8443'
    named, _ = unserved(_service("webhooks"), 443, [BACKEND])
    assert named is not None
    assert named.startswith(
        'endpointslices for service/hook in "ns" have no addresses with port name "https"'
    )
    udp, _ = unserved(_service("webhook", protocol="UDP"), 443, [BACKEND])
    assert udp is not None and 'targetPort "webhook" is no UDP port' in udp
    why, assumed = unserved(_service(), 443, [BACKEND])  # targetPort left out: the port itself
    assert why is None
    assert assumed is not None and "targetPort 443: no container of its pods declares it" in assumed


def test_a_webhook_service_whose_target_port_no_container_declares_refuses(site, inputs):
    """The first SecretStore synced is refused: its validating webhook (failurePolicy Fail) has no
    endpoint although its pod runs."""
    tree = edited(inputs, ONE, ESO_SERVICE, _target("webhooks"))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-secret-store",
        "SecretStore",
        "ValidatingWebhookConfiguration secretstore-validate (validate.secretstore.external-secrets.io) cannot answer",
        'endpointslices for service/external-secrets-webhook in "external-secrets" have no addresses with port '
        'name "webhook": targetPort "webhooks"',
    )


def test_an_apiservice_whose_service_is_not_served_is_not_available(site, inputs):
    tree = edited(inputs, ONE, METRICS_SERVICE, _target("metrics"))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-metrics-server",
        "APIService v1beta1.metrics.k8s.io",
        'endpointslices for service/metrics-server in "kube-system" have no addresses with port name "https"',
    )


def test_valid_alternatives_of_the_same_fields_come_up(site, inputs):
    """A probe on a port number, a liveness probe the kubelet cannot resolve (it runs on unchecked), no
    readiness gates, numbered targetPorts a container declares and a named one it declares."""

    def grafana(doc):
        container = next(c for c in _pod(doc)["containers"] if c["name"] == "grafana")
        port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grafana")
        container["readinessProbe"]["httpGet"]["port"] = port
        container["livenessProbe"]["httpGet"]["port"] = "grafana-live"
        _pod(doc)["readinessGates"] = []

    tree = edited(inputs, ONE, GRAFANA, grafana)
    for path, change in (
        (METRICS_SERVICE, _target(10250)),
        (ESO_SERVICE, _target(10250)),
        (KUEUE_SERVICE, _target("webhook-server")),
    ):
        tree = edited({ONE: (tree, inputs[ONE][1])}, ONE, path, change)
    result = run(site, inputs, ONE, tree=tree)
    assert result.ok, result.blocker
    assert not [line for line in result.assumed if "targetPort" in line]
