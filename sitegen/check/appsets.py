"""An offline ApplicationSet expander: the Applications Argo CD would generate from dist/.

Argo CD has no offline renderer (`argocd appset generate` needs a server), so this covers what the
project uses: list, matrix and git files generators (JSON or YAML files of this repository, their
keys kept nested as goTemplate keeps them, beside `path.*`; a pattern's `*` crosses folders, as
`git ls-files` matches it by default), a generator's `selector` (a label selector over the element's
parameters flattened with dots, every value a string: applicationset/generators
generator_spec_processor.go), goTemplate with `missingkey=error`
(field lookups and `toJson`), `templatePatch`, and the resources finalizer the controller adds unless the
ApplicationSet preserves resources on deletion. Anything else is reported, not guessed.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.check.labels import label_selector_matches
from sitegen.model import paths
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
WAVE_LABEL = "sitegen.io/wave"  # a generated app's wave: its ApplicationSet's in its cluster's root

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
        metadata = self.body["metadata"]
        wave = dig(metadata, "annotations", "argocd.argoproj.io/sync-wave")
        return str(wave if wave is not None else dig(metadata, "labels", WAVE_LABEL, default="0"))


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


RepoFiles = Callable[[str], list[tuple[str, str]]]  # pattern -> (repository path, text) of each match


def dist_files(dist: Path, repo_dist: PurePosixPath = paths.REPO_DIST) -> RepoFiles:
    """The repository's files under dist/ as the repo server lists them for a files generator."""

    def match(pattern: str) -> list[tuple[str, str]]:
        found = []
        for file in sorted(dist.rglob(PurePosixPath(pattern).name)):
            repo_path = (repo_dist / file.relative_to(dist).as_posix()).as_posix()
            if fnmatch.fnmatchcase(repo_path, pattern):
                found.append((repo_path, file.read_text()))
        return found

    return match


def texts_files(texts: Mapping[PurePosixPath, str], repo_dist: PurePosixPath = paths.REPO_DIST) -> RepoFiles:
    """The same over files held in memory (dist-relative paths)."""

    def match(pattern: str) -> list[tuple[str, str]]:
        found = [((repo_dist / path).as_posix(), text) for path, text in texts.items()]
        return sorted((p, t) for p, t in found if fnmatch.fnmatchcase(p, pattern))

    return match


def _path_params(repo_path: str) -> dict[str, Any]:
    """The `path` parameters the git files generator adds (goTemplate: a nested object)."""
    file = PurePosixPath(repo_path)
    folder = file.parent
    return {
        "path": folder.as_posix(),
        "basename": folder.name,
        "filename": file.name,
        "basenameNormalized": re.sub(r"[^a-z0-9-.]", "-", folder.name.lower()),
        "filenameNormalized": re.sub(r"[^a-z0-9-.]", "-", file.name.lower()),
        "segments": list(folder.parts),
    }


def _files(generator: dict[str, Any], path: str, files: RepoFiles | None) -> list[tuple[str, dict[str, Any]]]:
    git = generator["git"]
    if git.get("directories") or not git.get("files"):
        raise ExpandError(f"{path}.git", "a git generator is expanded offline for files only")
    if files is None:
        raise ExpandError(f"{path}.git", "a git files generator needs the repository's files")
    found = []
    for i, entry in enumerate(git["files"]):
        for repo_path, text in files(entry["path"]):
            try:
                element = json.loads(text) if repo_path.endswith(".json") else yaml.safe_load(text)
            except (ValueError, yaml.YAMLError) as error:
                raise ExpandError(f"{path}.git.files[{i}]", f"{repo_path} does not parse: {error}") from error
            elements = element if isinstance(element, list) else [element]
            for element in elements:
                if not isinstance(element, dict):
                    raise ExpandError(f"{path}.git.files[{i}]", f"{repo_path} holds no object")
                found.append(
                    (f"{path}.git.files[{i}]:{repo_path}", {**element, "path": _path_params(repo_path)})
                )
    return found


def flattened(params: Any, prefix: str = "") -> dict[str, str]:
    """Parameters as a selector sees them: nested keys joined by dots, list items by index, every value
    printed (Go's %v: true, not True)."""
    if isinstance(params, dict):
        items = params.items()
    elif isinstance(params, list):
        items = ((str(i), v) for i, v in enumerate(params))
    else:
        value = str(params).lower() if isinstance(params, bool) else str(params)
        return {prefix: value}
    found: dict[str, str] = {}
    for key, value in items:
        found.update(flattened(value, f"{prefix}.{key}" if prefix else str(key)))
    return found


def _generate(
    generator: dict[str, Any], path: str, files: RepoFiles | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(element path, parameters) for each element the generator yields that its selector admits."""
    found = _elements(generator, path, files)
    if "selector" in generator:
        found = [(p, e) for p, e in found if label_selector_matches(generator["selector"], flattened(e))]
    return found


def _elements(
    generator: dict[str, Any], path: str, files: RepoFiles | None = None
) -> list[tuple[str, dict[str, Any]]]:
    if "git" in generator:
        return _files(generator, path, files)
    if "list" in generator:
        elements = generator["list"].get("elements") or []
        return [(f"{path}.list.elements[{i}]", dict(e)) for i, e in enumerate(elements)]
    if "matrix" in generator:
        children = generator["matrix"].get("generators") or []
        if len(children) != 2:
            raise ExpandError(f"{path}.matrix", "a matrix generator takes exactly two generators")
        left = _generate(children[0], f"{path}.matrix.generators[0]", files)
        right = _generate(children[1], f"{path}.matrix.generators[1]", files)
        return [
            (lp, {**lparams, **rparams}) for (lp, lparams), (_, rparams) in itertools.product(left, right)
        ]
    kinds = ", ".join(sorted(set(generator) - {"selector"})) or "empty"
    raise ExpandError(path, f"generator {kinds} is not supported offline (list, matrix and git files are)")


def expand(doc: Document, files: RepoFiles | None = None) -> list[ExpandedApp]:
    spec = doc.body.get("spec") or {}
    if not spec.get("goTemplate") or "missingkey=error" not in (spec.get("goTemplateOptions") or []):
        raise ExpandError("$.spec.goTemplate", "ApplicationSets here use goTemplate with missingkey=error")
    template = spec.get("template") or {}
    apps = []
    for i, generator in enumerate(spec.get("generators") or []):
        for where, params in _generate(generator, f"$.spec.generators[{i}]", files):
            body = _render(copy.deepcopy(template), params, where)
            patch = spec.get("templatePatch")
            if patch:
                body = _merge(body, yaml.safe_load(render_string(patch, params, where)))
            metadata = {**body.get("metadata", {}), "namespace": doc.namespace}
            if not metadata.get("finalizers") and not dig(
                spec, "syncPolicy", "preserveResourcesOnDeletion"
            ):  # the controller's: deleting the app deletes its objects
                metadata["finalizers"] = [RESOURCES_FINALIZER]
            application = {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                **body,
                "metadata": metadata,
            }
            apps.append(ExpandedApp(doc, where, application))
    return apps


def applications(
    docs: list[Document], files: RepoFiles | None = None
) -> tuple[list[ExpandedApp], list[tuple[Document, ExpandError]]]:
    """Every Application of the tree (generated and literal) and the ApplicationSets that failed;
    `files` lists the repository's files for git files generators."""
    apps: list[ExpandedApp] = []
    errors: list[tuple[Document, ExpandError]] = []
    for doc in docs:
        if doc.group != "argoproj.io":
            continue
        if doc.kind == "Application":
            apps.append(ExpandedApp(doc, "$", doc.body))
        elif doc.kind == "ApplicationSet":
            try:
                apps += expand(doc, files)
            except ExpandError as err:
                errors.append((doc, err))
    return apps, errors
