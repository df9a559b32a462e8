"""An offline ApplicationSet expander: the Applications Argo CD would generate from dist/.

Argo CD has no offline renderer (`argocd appset generate` needs a server), so this covers what the
project uses: list and matrix generators, goTemplate with `missingkey=error` (field lookups and
`toJson`), and `templatePatch`. Anything else is reported, not guessed.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from sitegen.check.tree import Document

_EXPR = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


class ExpandError(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class ExpandedApp:
    """One Application: generated from `source` (an ApplicationSet) or written literally."""

    source: Document
    element_path: str  # JSON path of the generator element, or "$" for a literal Application
    body: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def spec(self) -> dict[str, Any]:
        return self.body["spec"]

    @property
    def project(self) -> str:
        return str(self.spec.get("project", ""))

    @property
    def destination(self) -> tuple[str, str]:
        dest = self.spec.get("destination") or {}
        return str(dest.get("server", "")), str(dest.get("namespace", ""))

    @property
    def sources(self) -> list[dict[str, Any]]:
        return list(self.spec.get("sources") or ([self.spec["source"]] if "source" in self.spec else []))

    @property
    def wave(self) -> str:
        return str((self.body["metadata"].get("annotations") or {}).get("argocd.argoproj.io/sync-wave", "0"))


def _lookup(params: dict[str, Any], dotted: str, where: str) -> Any:
    node: Any = params
    for part in dotted.lstrip(".").split("."):
        if not isinstance(node, dict) or part not in node:
            raise ExpandError(where, f"missingkey=error: no {dotted!r} in the generator parameters")
        node = node[part]
    return node


def _evaluate(expr: str, params: dict[str, Any], where: str) -> Any:
    parts = expr.split()
    if len(parts) == 1 and parts[0].startswith("."):
        return _lookup(params, parts[0], where)
    if len(parts) == 2 and parts[0] == "toJson" and parts[1].startswith("."):
        return json.dumps(_lookup(params, parts[1], where))
    raise ExpandError(where, f"template expression {{{{ {expr} }}}} is not supported offline")


def render_string(text: str, params: dict[str, Any], where: str) -> str:
    return _EXPR.sub(lambda m: str(_evaluate(m.group(1), params, where)), text)


def _render(node: Any, params: dict[str, Any], where: str) -> Any:
    if isinstance(node, str):
        return render_string(node, params, where)
    if isinstance(node, dict):
        return {render_string(k, params, where): _render(v, params, where) for k, v in node.items()}
    if isinstance(node, list):
        return [_render(v, params, where) for v in node]
    return node


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base.get(key), value) if key in base else value
        return out
    return patch


def _generate(generator: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    """(element path, parameters) for each element the generator yields."""
    if "list" in generator:
        elements = generator["list"].get("elements") or []
        return [(f"{path}.list.elements[{i}]", dict(e)) for i, e in enumerate(elements)]
    if "matrix" in generator:
        children = generator["matrix"].get("generators") or []
        if len(children) != 2:
            raise ExpandError(f"{path}.matrix", "a matrix generator takes exactly two generators")
        left = _generate(children[0], f"{path}.matrix.generators[0]")
        right = _generate(children[1], f"{path}.matrix.generators[1]")
        return [
            (lp, {**lparams, **rparams}) for (lp, lparams), (_, rparams) in itertools.product(left, right)
        ]
    kinds = ", ".join(sorted(generator)) or "empty"
    raise ExpandError(path, f"generator {kinds} is not supported offline (list and matrix are)")


def expand(doc: Document) -> list[ExpandedApp]:
    spec = doc.body.get("spec") or {}
    if not spec.get("goTemplate") or "missingkey=error" not in (spec.get("goTemplateOptions") or []):
        raise ExpandError("$.spec.goTemplate", "ApplicationSets here use goTemplate with missingkey=error")
    template = spec.get("template") or {}
    apps = []
    for i, generator in enumerate(spec.get("generators") or []):
        for where, params in _generate(generator, f"$.spec.generators[{i}]"):
            body = _render(copy.deepcopy(template), params, where)
            patch = spec.get("templatePatch")
            if patch:
                body = _merge(body, yaml.safe_load(render_string(patch, params, where)))
            metadata = {**body.get("metadata", {}), "namespace": doc.namespace}
            application = {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                **body,
                "metadata": metadata,
            }
            apps.append(ExpandedApp(doc, where, application))
    return apps


def applications(docs: list[Document]) -> tuple[list[ExpandedApp], list[tuple[Document, ExpandError]]]:
    """Every Application of the tree (generated and literal) and the ApplicationSets that failed."""
    apps: list[ExpandedApp] = []
    errors: list[tuple[Document, ExpandError]] = []
    for doc in docs:
        if doc.group != "argoproj.io":
            continue
        if doc.kind == "Application":
            apps.append(ExpandedApp(doc, "$", doc.body))
        elif doc.kind == "ApplicationSet":
            try:
                apps += expand(doc)
            except ExpandError as err:
                errors.append((doc, err))
    return apps, errors
