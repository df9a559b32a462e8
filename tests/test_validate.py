"""`sitegen validate`: schemas of every kind, offline, strict; the committed tree is clean."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sitegen.check.schemas import SchemaCatalog, strict_crd_schema

from .conftest import DIST, PINS, add, invoke_sitegen, validate

pytestmark = pytest.mark.tree_variants("one-cluster")  # what these tests break is in one-cluster


def test_committed_dist_is_valid():
    result = validate(DIST)
    assert result.exit_code == 0, result.stdout
    assert result.stdout.strip().splitlines()[-1].endswith("0 findings (schema: 0, policy: 0)")


def test_every_document_is_counted():
    summary = validate(DIST).stdout.strip().splitlines()[-1]
    # counted by the YAML parser's document events: independent of how validate builds documents
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    total = sum(
        isinstance(event, yaml.DocumentStartEvent)
        for p in DIST.rglob("*.yaml")
        for event in yaml.parse(p.read_text(), Loader=loader)
    )
    assert summary.startswith(f"validated {total} documents")


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x1"}}


@pytest.mark.parametrize(
    ("doc", "path", "message"),
    [
        ({**NODE, "spec": {"unschedulable": True, "colour": "red"}}, "$.spec", "colour"),
        ({**NODE, "metadata": {"name": "x1", "labels": {"a": 1}}}, "$.metadata.labels.a", "not of type"),
        ({**NODE, "metadata": {"name": "x1", "owner": "me"}}, "$.metadata", "owner"),
        ({"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g"}}, "$", "no schema for v1 Gadget"),
        ({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, "$", "no schema"),
        (
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "b300"},
                "spec": {"nodeLabels": {"a": "b"}, "colour": "red"},
            },
            "$.spec",
            "colour",
        ),
        (
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "q", "namespace": "t", "bogus": 1},
                "spec": {"clusterQueue": "cq"},
            },
            "$.metadata",
            "bogus",
        ),
        (
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "JoinConfiguration",
                "discovery": {
                    "bootstrapToken": {"apiServerEndpoint": "a:6443", "token": "t", "caCertHashes": ["h"]}
                },
                "nodeRegistration": {"name": "n", "criSocket": "s", "taint": []},
            },
            "$.nodeRegistration.taint",
            "Extra inputs",
        ),
    ],
    ids=[
        "core-unknown-field",
        "core-wrong-type",
        "core-metadata-unknown",
        "core-unknown-kind",
        "unknown-group",
        "crd-unknown-field",
        "crd-metadata-is-objectmeta",
        "host-config-misspelt",
    ],
)
def test_schema_finding(tree, doc, path, message):
    rel = add(tree, "one-cluster/apps/ai/broken/x.yaml", doc)
    result = validate(tree)
    assert result.exit_code == 1
    (line,) = [ln for ln in result.stdout.splitlines() if ln.startswith(rel)]
    assert f": schema: {path}: " in line
    assert message in line


def test_crd_rendered_into_dist_counts(tree):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {  # as synth writes every CRD: never pruned nor deleted with its Application
            "name": "widgets.example.com",
            "annotations": {"argocd.argoproj.io/sync-options": "Delete=false,Prune=false"},
        },
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                            },
                        }
                    },
                }
            ],
        },
    }
    add(tree, "one-cluster/apps/ai/widgets/crd.yaml", crd)
    add(
        tree,
        "one-cluster/apps/ai/widgets/ok.yaml",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}},
    )
    assert validate(tree).exit_code == 0
    add(
        tree,
        "one-cluster/apps/ai/widgets/bad.yaml",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "v"},
            "spec": {"size": "big"},
        },
    )
    result = validate(tree)
    assert result.exit_code == 1 and "widgets/bad.yaml" in result.stdout and "$.spec.size" in result.stdout


def test_no_crd_directory_is_needed(tree):
    """Charts render their CRDs; kinds registered at run time (Cilium's pools, nv-ipam's IPPool) have
    typed stand-ins: a checkout with nothing beside it validates strictly."""
    result = invoke_sitegen("validate", "--dist", tree)
    assert result.exit_code == 0, result.stdout
    (pool,) = tree.glob("one-cluster/apps/ai/*/nvidia-network-operator.ippool.rail-a.yaml")
    pool.write_text(pool.read_text().replace("perNodeBlockSize:", "perNodeBlocksize:"))
    result = invoke_sitegen("validate", "--dist", tree)
    assert result.exit_code == 1 and "IPPool nvidia-network-operator/rail-a: schema" in result.stdout


def test_missing_crd_directory_is_a_usage_error(tmp_path):
    result = invoke_sitegen("validate", "--dist", DIST, "--crds", tmp_path / "nope")
    assert result.exit_code == 2


# --- the CRD schema translation ----------------------------------------------------------------


def _errors(openapi: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    catalog = SchemaCatalog(PINS["kubernetes"], [])
    catalog.add_crd(
        {
            "kind": "CustomResourceDefinition",
            "spec": {
                "group": "t.io",
                "names": {"kind": "T"},
                "versions": [{"name": "v1", "served": True, "schema": {"openAPIV3Schema": openapi}}],
            },
        }
    )
    return [
        p.path
        for p in catalog.validate({"apiVersion": "t.io/v1", "kind": "T", "metadata": {"name": "t"}, **doc})
    ]


def _spec(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def test_int_or_string_accepts_both():
    schema = _spec(port={"x-kubernetes-int-or-string": True})
    assert _errors(schema, {"spec": {"port": 80}}) == []
    assert _errors(schema, {"spec": {"port": "http"}}) == []
    assert _errors(schema, {"spec": {"port": [80]}}) == ["$.spec.port"]


def test_preserve_unknown_fields_allows_anything_below():
    schema = _spec(values={"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    assert _errors(schema, {"spec": {"values": {"any": {"thing": 1}}}}) == []
    assert _errors(schema, {"spec": {"other": 1}}) == ["$.spec"]


def test_object_without_properties_prunes_everything():
    assert _errors(_spec(opts={"type": "object"}), {"spec": {"opts": {"x": 1}}}) == ["$.spec.opts"]


def test_embedded_resource_keeps_its_type_fields():
    embedded = {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    doc = {
        "spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": 1}}}
    }
    assert _errors(_spec(template=embedded), doc) == []


def test_nullable_and_exclusive_bounds():
    schema = _spec(n={"type": "integer", "nullable": True, "minimum": 0, "exclusiveMinimum": True})
    assert _errors(schema, {"spec": {"n": None}}) == []
    assert _errors(schema, {"spec": {"n": 1}}) == []
    assert _errors(schema, {"spec": {"n": 0}}) == ["$.spec.n"]


def test_translation_leaves_field_names_alone():
    """A field called `nullable` or `x-kubernetes-...` in `properties` is a field, not a keyword."""
    translated = strict_crd_schema(_spec(nullable={"type": "string"}))
    assert "nullable" in translated["properties"]["spec"]["properties"]


def test_structural_junctors_only_require_fields():
    """anyOf/oneOf branches of a CRD schema (CiliumNetworkPolicy: one of ingress/egress...) only say
    which fields must be present; strictness comes from the outer node. Adding
    additionalProperties:false to the branches refused every valid policy."""
    import jsonschema

    from sitegen.check.schemas import strict_crd_schema

    schema = strict_crd_schema(
        {
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "properties": {"ingress": {"type": "array"}, "egress": {"type": "array"}},
                "anyOf": [{"properties": {"ingress": {}}, "required": ["ingress"]},
                          {"properties": {"egress": {}}, "required": ["egress"]}],
            }},
        }
    )["properties"]["spec"]  # fmt: skip
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"ingress": [], "egress": []})
    assert not validator.is_valid({})  # a branch still requires its field
    assert not validator.is_valid({"ingress": [], "other": 1})  # the outer node stays strict
