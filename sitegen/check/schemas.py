"""Offline schemas for every document in dist/: core kinds, custom resources, host config files.

- Core kinds: the strict JSON schemas `kubernetes-validate` ships for the target Kubernetes minor
  (unknown fields are errors). The 1.5 MB definitions file is loaded once, validators are cached per kind.
- Custom resources: the `openAPIV3Schema` of the served version in the CRD files, translated into a
  strict JSON schema (unknown fields are errors unless `x-kubernetes-preserve-unknown-fields`).
- Host config files (kubeadm, kubelet, API server): the typed models they are built from
  (`constructs.host_config`); kinds without a CRD at hand: typed stand-ins (`check.crd_standins`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource

from constructs.host_config import HOST_CONFIG_MODELS
from sitegen.check.crd_standins import STANDIN_MODELS
from sitegen.tree.fields import dig
from sitegen.tree.kube_yaml import KubeLoader

_DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
_OBJECT_META = {"$ref": f"{_DEFINITIONS_ID}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}


@dataclass(frozen=True)
class Problem:
    path: str  # JSON path inside the document, e.g. $.spec.template.spec.containers[0].image
    message: str


def _json_path(error: jsonschema.ValidationError) -> str:
    return error.json_path


def _short(message: str, limit: int = 240) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _schema_root() -> Path:
    return Path(str(resources.files("kubernetes_validate") / "kubernetes-json-schema"))


@cache
def _core_catalog(minor: str) -> tuple[str, Registry]:
    """The strict schema folder for the newest bundled minor not newer than `minor`, and its registry."""
    wanted = tuple(int(p) for p in minor.lstrip("v").split(".")[:2])
    candidates = []
    for entry in _schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match and (int(match[1]), int(match[2])) <= wanted:
            candidates.append(((int(match[1]), int(match[2])), entry.name))
    if not candidates:
        raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {minor} or older")
    folder = max(candidates)[1]
    definitions = json.loads((_schema_root() / folder / "_definitions.json").read_text())
    return folder, Resource.from_contents(definitions) @ Registry()


@cache
def _crd_file(path: Path, mtime_ns: int) -> tuple[Any, ...]:
    """Parsed once per process and file version: the CRD files are megabytes of YAML."""
    return tuple(yaml.load_all(path.read_text(encoding="utf-8"), Loader=KubeLoader))


class SchemaCatalog:
    """Finds the schema for any (apiVersion, kind) and validates documents against it."""

    def __init__(self, kubernetes_version: str, crd_dirs: list[Path]):
        self.folder, self.registry = _core_catalog(kubernetes_version)
        self._core: dict[tuple[str, str], jsonschema.protocols.Validator | None] = {}
        self._custom: dict[tuple[str, str], dict[str, Any]] = {}
        self._custom_validators: dict[tuple[str, str], jsonschema.protocols.Validator] = {}
        for directory in crd_dirs:
            for path in sorted(directory.rglob("*.yaml")):
                for doc in _crd_file(path.resolve(), path.stat().st_mtime_ns):
                    self.add_crd(doc)

    def add_crd(self, doc: Any) -> None:
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            return
        spec = doc["spec"]
        for version in spec.get("versions", []):
            schema = dig(version, "schema", "openAPIV3Schema")
            if version.get("served") and schema is not None:
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                self._custom[key] = schema

    @property
    def custom_kinds(self) -> set[tuple[str, str]]:
        return set(self._custom)

    def _core_validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        key = (api_version, kind)
        if key not in self._core:
            group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
            path = _schema_root() / self.folder / f"{kind.lower()}-{group_version}.json"
            self._core[key] = (
                jsonschema.Draft202012Validator(json.loads(path.read_text()), registry=self.registry)
                if path.is_file()
                else None
            )
        return self._core[key]

    def _custom_validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        key = (api_version, kind)
        if key not in self._custom:
            return None
        if key not in self._custom_validators:
            schema = strict_crd_schema(self._custom[key])
            self._custom_validators[key] = jsonschema.Draft202012Validator(schema, registry=self.registry)
        return self._custom_validators[key]

    def validate(self, doc: dict[str, Any]) -> list[Problem]:
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return [Problem("$", "document has no apiVersion/kind")]
        model = HOST_CONFIG_MODELS.get((api_version, kind))
        if model is None and (api_version, kind) not in self._custom:
            model = STANDIN_MODELS.get((api_version, kind))  # a CRD, when given, is the better schema
        if model is not None:
            return _validate_model(model, doc)
        validator = self._core_validator(api_version, kind) or self._custom_validator(api_version, kind)
        if validator is None:
            return [
                Problem("$", f"no schema for {api_version} {kind} (neither core {self.folder} nor a CRD)")
            ]
        return [
            Problem(_json_path(e), _short(e.message))
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        ]


def _validate_model(model: Any, doc: dict[str, Any]) -> list[Problem]:
    from pydantic import ValidationError

    try:
        model.model_validate(doc)
    except ValidationError as err:
        return [
            Problem("$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]), e["msg"])
            for e in err.errors(include_url=False)
        ]
    return []


def strict_crd_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    """Translate a CRD structural schema into JSON Schema 2020-12 with the API server's semantics."""
    schema = _translate(copy.deepcopy(openapi))
    props = schema.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = _OBJECT_META  # the server validates metadata as ObjectMeta, whatever the CRD says
    return schema


def _translate(node: Any, junctor: bool = False) -> Any:
    """One schema node; recursion follows only the keywords whose values are schemas. Inside allOf,
    anyOf, oneOf and not (`junctor`) a node only constrains (which fields are required): the outer
    node's properties say what exists, so no additionalProperties is added there."""
    if not isinstance(node, dict):
        return node
    for key in ("properties", "patternProperties"):
        if key in node:
            node[key] = {name: _translate(sub) for name, sub in node[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _translate(node[key])
    if isinstance(node.get("not"), dict):
        node["not"] = _translate(node["not"], junctor=True)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            node[key] = [_translate(sub, junctor=True) for sub in node[key]]
    preserve = node.pop("x-kubernetes-preserve-unknown-fields", False)
    embedded = node.pop("x-kubernetes-embedded-resource", False)
    if node.pop("x-kubernetes-int-or-string", False):
        node.pop("type", None)
        node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    for key in [k for k in node if k.startswith("x-kubernetes-")]:
        node.pop(key)  # list/map types and CEL rules need the API server; not checkable offline
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        # OpenAPI v3's boolean form becomes JSON Schema's number form
        exclusive = node.pop(bound) if isinstance(node.get(bound), bool) else False
        if exclusive and limit in node:
            node[bound] = node.pop(limit)
    if embedded:
        props = node.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    # The server prunes what a structural schema does not name; here that is an error, not silent loss.
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and not preserve and not junctor and "additionalProperties" not in node:
        node["additionalProperties"] = False
    return node


_JSON_PATCH_OPS = {"add": True, "replace": True, "test": True, "remove": False, "move": False, "copy": False}


def json_patch_problems(operations: list[Any]) -> list[Problem]:
    """RFC 6902: each operation an object with a known `op`, a `path` pointer, and `value` where the op
    takes one (kubeadm's `<target>+json` patches)."""
    problems = []
    for i, op in enumerate(operations):
        where = f"$[{i}]"
        if not isinstance(op, dict) or op.get("op") not in _JSON_PATCH_OPS:
            problems.append(
                Problem(where, f"not a JSON patch operation (op one of {', '.join(_JSON_PATCH_OPS)})")
            )
            continue
        if not isinstance(op.get("path"), str) or not op["path"].startswith("/"):
            problems.append(Problem(f"{where}.path", "a JSON pointer starting with /"))
        if _JSON_PATCH_OPS[op["op"]] and "value" not in op:
            problems.append(Problem(where, f"op {op['op']} needs a value"))
    return problems
