"""Hydration's own mechanics: how helm's output is split, kept and identified."""

from __future__ import annotations

import pytest
import yaml

from sitegen.components.base import JsonPatch, ObjectPatch
from sitegen.compose.hydrate import HydrationError, RenderJob, _patch, _split, _without_schemas, render
from sitegen.compose.variant import render_jobs
from sitegen.tree.kube_yaml import KubeLoader

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Cluster
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          schema:
            type: string
          operator:
            enum: [=, "!="]
    served: true
    storage: true
  - schema:
      openAPIV3Schema:
        type: object
    name: v1beta1
    served: false
"""

STREAM = f"""---
# Source: widgets/crds/widgets.yaml
{CRD}---
# Source: widgets/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  when: 2026-12-03
---
# Source: widgets/templates/empty.yaml
"""


def _job(**kw) -> RenderJob:
    base = dict(
        app="v/c/widgets",
        release="widgets",
        namespace="widgets",
        archive="x.tgz",
        archive_sha256="0",
        values={},
        kube_version="1.35.0",
        api_versions=(),
        folder="v/apps/c/widgets",
    )
    return RenderJob(**{**base, **kw})


def test_a_crd_is_identified_without_its_schemas():
    head = yaml.safe_load(_without_schemas(CRD))
    assert head["metadata"]["name"] == "widgets.example.com" and head["spec"]["scope"] == "Cluster"
    assert [(v["name"], v["served"]) for v in head["spec"]["versions"]] == [("v1", True), ("v1beta1", False)]
    assert all("schema" not in v for v in head["spec"]["versions"])


def test_crds_are_kept_verbatim_and_the_rest_parsed():
    verbatim, objects = _split(_job(), STREAM)
    ((text, head),) = verbatim.items()
    assert text == "---\n" + CRD  # the chart's own bytes: reviewable against upstream, no re-dump
    assert head["kind"] == "CustomResourceDefinition"
    (config_map,) = objects
    assert config_map["data"]["when"] == "2026-12-03"  # a date stays the string the API server reads


def test_a_patch_that_matches_nothing_stops_hydration():
    patch = ObjectPatch(
        "Deployment", "gone", "renamed upstream", (JsonPatch("replace", "/spec/replicas", 2),)
    )
    with pytest.raises(HydrationError, match="patch for Deployment gone matches no object"):
        _patch(_job(patches=(patch,)), [{"kind": "Deployment", "metadata": {"name": "here"}}])


@pytest.mark.parametrize(
    "op",
    [
        JsonPatch("test", "/spec/template/spec/containers/0/name", "redis"),  # the chart renamed it
        JsonPatch("remove", "/data/_REDIS_URL_CORE"),  # the chart no longer renders the key
    ],
)
def test_a_patch_that_no_longer_fits_the_chart_stops_hydration(op):
    """Harbor's Redis patches assume the chart's shapes: a bump that changes them stops the render,
    named, rather than patching something else or leaving a passwordless URL behind."""
    objects = [
        {
            "kind": "StatefulSet",
            "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [{"name": "valkey"}]}}},
        },
        {"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}},
    ]
    kind = "StatefulSet" if op.op == "test" else "ConfigMap"
    job = _job(patches=(ObjectPatch(kind, "x", "why", (op,)),))
    with pytest.raises(
        HydrationError, match=rf"patch for {kind} x \({op.op} {op.path}\) no longer fits the chart"
    ):
        _patch(job, objects)


def test_a_copy_patch_adds_the_changed_copy_and_keeps_the_original():
    """DirectPV's node server gets an account of its own: the chart's, copied and narrowed."""
    role = {"kind": "ClusterRole", "metadata": {"name": "chart"}, "rules": [{"verbs": ["*"]}]}
    patch = ObjectPatch("ClusterRole", "chart", "why", (JsonPatch("replace", "/rules", []),), copy_as="agent")
    objects = _patch(_job(patches=(patch,)), [role])
    assert objects == [role, {"kind": "ClusterRole", "metadata": {"name": "agent"}, "rules": []}]
    assert role["rules"] == [{"verbs": ["*"]}]


def test_a_rendered_objects_kept_body_is_what_its_file_says(site):
    """The render keeps each parsed object with its text (no synth parses it again): the two agree,
    patches included; a CRD, kept verbatim, is parsed from its text when asked."""
    (job,) = [
        j for j in render_jobs(site, ["two-cluster"]) if j.app == "two-cluster/aistor/aistor-volumemanager"
    ]
    rendered = render(job)
    kept = [o for o in rendered.objects if o.body is not None]
    assert kept and any(o.kind == "DaemonSet" for o in kept)
    for obj in rendered.objects:
        parsed = next(d for d in yaml.load_all(obj.text, Loader=KubeLoader) if isinstance(d, dict))
        assert obj.document() == parsed, obj.path
        assert (obj.body is None) == (obj.kind == "CustomResourceDefinition"), obj.path
