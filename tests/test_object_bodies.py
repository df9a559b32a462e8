"""An object's fields beyond its metadata stay on the Python side of jsii until its chart synthesizes
(constructs/objects.py): what cdk8s returns must come back whole, once, and as jsii would have sent it."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

import pytest
from cdk8s import App, Chart

from constructs.host_file import HostFile
from constructs.objects import api_object, with_bodies
from sitegen.compose.charts import ObjectChart

from .conftest import REPO


def _chart() -> ObjectChart:
    return ObjectChart(App(), "test", folder=PurePosixPath("apps/test"))


def test_a_chart_synthesizes_each_object_with_its_fields() -> None:
    chart = _chart()
    shared = {"image": "busybox", "args": ["a", None]}
    api_object(
        chart,
        "a",
        "v1",
        "ConfigMap",
        {"name": "a", "namespace": "x"},
        data={"k": "v", "gone": None, "n": 2.0, "r": 0.5},
        top=None,
    )
    api_object(chart, "b", "v1", "Pod", {"name": "b", "namespace": "x"}, spec={"containers": [shared]})
    api_object(chart, "c", "v1", "Pod", {"name": "c", "namespace": "x"}, spec={"containers": [shared]})
    api_object(chart, "d", "v1", "Namespace", {"name": "x"})
    docs = {d["metadata"]["name"]: d for d in chart.documents}
    # as the round trip through Node returned them (cdk8s 2.x, jsii): a mapping's null is left out, a
    # list keeps its own, JavaScript's one number type makes 2.0 an integer
    assert docs["a"]["data"] == {"k": "v", "n": 2, "r": 0.5}
    assert type(docs["a"]["data"]["n"]) is int
    assert "top" not in docs["a"]
    assert docs["b"]["spec"] == {"containers": [{"image": "busybox", "args": ["a", None]}]}
    assert set(docs["x"]) == {"apiVersion", "kind", "metadata"}
    # no two documents share a value: the ownership rules and patches change documents in place
    docs["b"]["spec"]["containers"][0]["image"] = "changed"
    assert docs["c"]["spec"]["containers"][0]["image"] == "busybox"
    assert shared["image"] == "busybox"


def test_an_object_holds_its_fields_as_they_were_when_it_was_made() -> None:
    """As jsii sent them to Node at the call: the caller changing its dict afterwards changes nothing."""
    chart = _chart()
    spec = {"replicas": 1}
    api_object(chart, "a", "apps/v1", "Deployment", {"name": "a", "namespace": "x"}, spec=spec)
    spec["replicas"] = 2
    assert chart.documents[0]["spec"] == {"replicas": 1}


def test_an_object_without_a_name_takes_the_one_cdk8s_gives_it() -> None:
    chart = Chart(App(), "test")
    host_file = HostFile(chart, "File", file_name="f.yaml", header="")
    api_object(host_file, "Resource", "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", None, port=1)
    assert host_file.documents() == [
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "port": 1}
    ]


def test_two_objects_of_one_name_in_a_chart_are_refused() -> None:
    chart = _chart()
    api_object(chart, "a", "v1", "ConfigMap", {"name": "same", "namespace": "x"}, data={"k": "1"})
    api_object(chart, "b", "v1", "ConfigMap", {"name": "same", "namespace": "x"}, data={"k": "2"})
    with pytest.raises(ValueError, match="two objects"):
        _ = chart.documents


def test_fields_kept_for_an_object_cdk8s_did_not_return_are_refused() -> None:
    chart = _chart()
    obj = api_object(chart, "a", "v1", "ConfigMap", {"name": "a", "namespace": "x"}, data={"k": "v"})
    with pytest.raises(ValueError, match="kept but not synthesized"):
        with_bodies([], [obj])


def test_no_code_patches_an_object_on_the_node_side() -> None:
    """A JSON patch of an `api_object` runs in Node before its kept fields join it: one at `/spec`
    would be overwritten without a word, one below it fails. Fields go into `api_object` instead."""
    found = []
    for folder in ("constructs", "sitegen"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            found += [
                f"{path.relative_to(REPO)}:{node.lineno}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "add_json_patch"
            ]
    assert not found, found
