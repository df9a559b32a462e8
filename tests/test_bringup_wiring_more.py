"""What the API server, Envoy Gateway and the CSI provisioners refuse in the bring-up: a custom resource in a
version its CRD does not serve, Gateway API objects Envoy Gateway does not accept (as Argo CD's own checks
read their status), claims whose access modes their CSI driver does not take. Each defect put back into a
copy of the hydrated tree is named with app, object and reason; a valid alternative still comes up."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.health import builtin_script, run_health_script
from sitegen.check.bringup.objects import ClusterObjects
from sitegen.check.bringup.refusals.crd_versions import unserved_version
from sitegen.check.bringup.refusals.csi import declared, provisioning_refusal

from .bringup_cases import ONE, blocked, edited, installed, rewaved, run

GATEWAY_API = "gateway.networking.k8s.io"
_INSTALLED: dict[str, Cluster] = {}


def _ai(site, inputs) -> Cluster:
    """The one-cluster variant's cluster once installed (one bring-up for every look below)."""
    if "ai" not in _INSTALLED:
        _INSTALLED["ai"] = installed(site, inputs).state.clusters["ai"]
    return _INSTALLED["ai"]


# --- CRD versions ----------------------------------------------------------------------------------------


def test_a_custom_resource_in_a_version_its_crd_does_not_serve(site, inputs):
    """external-snapshotter's CRD keeps v1beta1 listed with served: false: a VolumeSnapshotClass in it has no
    REST mapping, and the sync of its app fails naming the object."""

    def beta(doc):
        doc["apiVersion"] = "snapshot.storage.k8s.io/v1beta1"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/powerscale/volumesnapshotclass.powerscale", beta)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-powerscale",
        "VolumeSnapshotClass powerscale",
        'no matches for kind "VolumeSnapshotClass" in version "snapshot.storage.k8s.io/v1beta1"',
        "serves v1",
    )


def _crd(group: str, kind: str, plural: str, versions: dict[str, bool]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "versions": [{"name": v, "served": s} for v, s in versions.items()],
        },
    }


def test_served_versions_pass_and_the_others_are_refused():
    cluster = ClusterObjects("x", None)  # type: ignore[arg-type]
    cluster.apply(_crd(GATEWAY_API, "HTTPRoute", "httproutes", {"v1": True, "v1beta1": True}), "crds")
    cluster.apply(_crd("example.io", "Thing", "things", {"v2": True, "v1": False}), "crds")
    route = {"kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "n"}}
    assert unserved_version({**route, "apiVersion": f"{GATEWAY_API}/v1beta1"}, cluster) is None  # served too
    assert unserved_version({**route, "apiVersion": f"{GATEWAY_API}/v1"}, cluster) is None
    thing = {"kind": "Thing", "metadata": {"name": "t"}}
    assert "serves v2" in str(unserved_version({**thing, "apiVersion": "example.io/v1"}, cluster))
    assert 'in version "example.io/v3"' in str(
        unserved_version({**thing, "apiVersion": "example.io/v3"}, cluster)
    )
    # built-in kinds and kinds without a CRD here (an aggregated API's) are not this check's
    assert (
        unserved_version(
            {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}}, cluster
        )
        is None
    )
    assert (
        unserved_version(
            {"apiVersion": "metrics.k8s.io/v1", "kind": "PodMetrics", "metadata": {"name": "p"}}, cluster
        )
        is None
    )


# --- Gateway API --------------------------------------------------------------------------------------------


def test_routes_synced_before_their_backends_never_become_healthy(site, inputs):
    """The routes in a wave before the front ends they route to: Envoy Gateway reports ResolvedRefs=False
    (BackendNotFound), Argo CD's HTTPRoute check Degraded, and the front ends' waves never start."""
    tree, texts = rewaved(inputs, ONE, "ai/gateway-routes", 11)
    blocked(
        run(site, inputs, ONE, tree=tree, texts=texts),
        "ai-gateway-routes",
        "HTTPRoute grafana/grafana Degraded",
        "failed to process route rule 0 backendRef 0: service grafana/grafana not found",
    )


def test_a_gateway_class_no_running_controller_claims(site, inputs):
    """Envoy Gateway manages gateway.envoyproxy.io/gatewayclass-controller: a class naming another
    controller is accepted by nobody, its Gateway gets no status and Argo CD waits on it."""

    def other(doc):
        doc["spec"]["controllerName"] = "example.com/gateway-controller"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/gateway/gatewayclass.envoy", other)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-gateway",
        "Gateway envoy-gateway-system/site",
        "Waiting for Gateway status",
        "no running controller named example.com/gateway-controller",
    )


def _health(kind: str, body: dict[str, Any], cluster: Cluster) -> tuple[str, str]:
    script = builtin_script(GATEWAY_API, kind)
    assert script is not None
    return run_health_script(script, {**body, "status": cluster.operators.controller_status(body)})


def _live(cluster: Cluster, kind: str, ns: str, name: str) -> dict[str, Any]:
    found = cluster.find(kind, ns, name)
    assert found is not None
    return copy.deepcopy(dict(found.body))


def test_routes_as_envoy_gateway_accepts_them(site, inputs):
    ai = _ai(site, inputs)
    route = _live(ai, "HTTPRoute", "grafana", "grafana")
    assert _health("HTTPRoute", route, ai) == ("Healthy", "HTTPRoute is healthy")
    # harmless: no sectionName attaches to every listener; the grafana one admits it by namespace and host
    del route["spec"]["parentRefs"][0]["sectionName"]
    assert _health("HTTPRoute", route, ai)[0] == "Healthy"
    cases = [
        (
            lambda r: r["spec"]["parentRefs"][0].update(sectionName="https-nope"),
            "No listeners match this parent ref",
        ),
        (
            lambda r: r["spec"]["parentRefs"][0].update(sectionName="https-harbor"),
            "No listeners included by this parent ref allowed this attachment.",
        ),
        (
            lambda r: r["spec"].update(hostnames=["other.hpc.example.internal"]),
            "There were no hostname intersections between the HTTPRoute and this parent ref's Listener(s).",
        ),
        (
            lambda r: r["spec"]["rules"][0]["backendRefs"][0].update(port=8080),
            "failed to process route rule 0 backendRef 0: TCP Port 8080 not found on Service grafana/grafana",
        ),
        (
            lambda r: r["spec"]["rules"][0]["backendRefs"][0].update(namespace="harbor", name="harbor"),
            "failed to process route rule 0 backendRef 0: Backend ref to Service harbor/harbor not permitted by any "
            "ReferenceGrant.",
        ),
    ]
    for change, message in cases:
        broken = _live(ai, "HTTPRoute", "grafana", "grafana")
        change(broken)
        assert _health("HTTPRoute", broken, ai) == ("Degraded", f"Parent site: {message}")


def test_a_route_to_no_gateway_waits_and_says_why(site, inputs):
    ai = _ai(site, inputs)
    route = _live(ai, "HTTPRoute", "grafana", "grafana")
    route["spec"]["parentRefs"][0]["name"] = "elsewhere"
    assert _health("HTTPRoute", route, ai) == ("Progressing", "Waiting for HTTPRoute status")
    assert (
        ai.operators.behind_status(route)
        == "its parent Gateway envoy-gateway-system/elsewhere does not exist"
    )


def test_gateways_and_classes_as_envoy_gateway_accepts_them(site, inputs):
    ai = _ai(site, inputs)
    site_gw = _live(ai, "Gateway", "envoy-gateway-system", "site")
    assert _health("Gateway", site_gw, ai) == ("Healthy", "Gateway is healthy")
    site_gw["spec"]["listeners"][0]["tls"]["certificateRefs"][0]["name"] = "missing-tls"
    assert _health("Gateway", site_gw, ai) == (
        "Degraded",
        "Listener: certificate refs 0: Secret envoy-gateway-system/missing-tls does not exist.",
    )
    envoy = _live(ai, "GatewayClass", "", "envoy")
    assert ai.operators.controller_status(envoy)["conditions"][0]["status"] == "True"
    envoy["spec"]["parametersRef"]["name"] = "absent"
    (accepted,) = ai.operators.controller_status(envoy)["conditions"]
    assert accepted["status"] == "False" and accepted["reason"] == "InvalidParameters"
    assert "failed to find envoyproxy envoy-gateway-system/absent" in accepted["message"]


# --- CSI access modes ---------------------------------------------------------------------------------------


def test_a_claim_template_its_driver_cannot_provision(site, inputs):
    """TopoLVM takes SINGLE_NODE_WRITER only: a ReadWriteMany claim of local-nvme is never provisioned,
    the model server's pods never start."""

    def shared(doc):
        doc["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = ["ReadWriteMany"]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/models/ai-research.statefulset.llama-3-3-70b", shared)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-models",
        "llama-3-3-70b",
        'failed to provision volume with StorageClass "local-nvme": rpc error: code = InvalidArgument '
        "desc = unsupported access mode: MULTI_NODE_MULTI_WRITER",
    )


@pytest.mark.parametrize(
    ("storage_class", "modes", "refused"),
    [
        ("local-nvme", ["ReadWriteOnce"], None),
        (
            "local-nvme",
            ["ReadWriteOncePod"],
            None,
        ),  # mapped to SINGLE_NODE_WRITER (no SINGLE_NODE_MULTI_WRITER)
        ("local-nvme", ["ReadOnlyMany"], "unsupported access mode: MULTI_NODE_READER_ONLY"),
        ("directpv-min-io", ["ReadWriteOncePod"], None),
        (
            "directpv-min-io",
            ["ReadWriteMany"],
            "unsupported access mode MULTI_NODE_MULTI_WRITER for volume pvc-<uid>",
        ),
        ("powerscale-datasets", ["ReadWriteMany"], None),
        ("powerscale-datasets", ["ReadOnlyMany"], None),
        ("powerscale-home", ["ReadWriteOncePod"], None),
    ],
)
def test_access_modes_each_driver_takes(site, inputs, storage_class, modes, refused):
    ai = _ai(site, inputs)
    why = provisioning_refusal({"storageClassName": storage_class, "accessModes": modes}, ai)
    assert (why is None) if refused is None else (refused in str(why)), why


def test_a_claim_of_modes_its_driver_refuses_stays_pending(site, inputs):
    """A PersistentVolumeClaim: storage.py's claim_status (Argo CD's PVC health, the pods that mount it)."""
    ai = _ai(site, inputs)
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "scratch", "namespace": "ai-research"},
        "spec": {"storageClassName": "directpv-min-io", "accessModes": ["ReadOnlyMany"]},
    }
    ai.apply(claim, "test")
    try:
        assert "unsupported access mode MULTI_NODE_READER_ONLY" in str(
            ai.storage.claim_status("ai-research", "scratch")
        )
        ai.apply({**claim, "spec": {**claim["spec"], "accessModes": ["ReadWriteOnce"]}}, "test")
        assert ai.storage.claim_status("ai-research", "scratch") is None
    finally:
        ai.delete(("", "PersistentVolumeClaim", "ai-research", "scratch"))
    assert set(declared()) == {"topolvm.io", "directpv-min-io", "csi-isilon.dellemc.com"}
