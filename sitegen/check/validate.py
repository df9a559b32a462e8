"""`sitegen validate`: every document of dist/ against its schema, then every policy rule."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path, PurePosixPath

from constructs import host_config
from sitegen.cache import keep, read_stored
from sitegen.check import crd_standins, schemas
from sitegen.check.allowlists import allow_lists
from sitegen.check.appsets import applications, dist_files
from sitegen.check.rules import Context, run_rules
from sitegen.check.schemas import SchemaCatalog, json_patch_problems
from sitegen.components.base import ChartComponent
from sitegen.compose.apps import variant_apps
from sitegen.compose.chart_supply import ChartStore
from sitegen.model import Site, resolve
from sitegen.tree import fields, kube_yaml
from sitegen.tree.documents import Document, load_tree


@dataclass(frozen=True)
class Finding:
    file: PurePosixPath
    index: int
    ref: str
    check: str  # "schema" or a rule id with its name
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file} [doc {self.index}] {self.ref}: {self.check}: {self.path}: {self.message}"


@dataclass(frozen=True)
class Report:
    findings: list[Finding]
    documents: Counter[str]  # per variant

    def as_json(self) -> str:
        """The findings for a script or a CI annotation: each with its file, document, object, rule (or
        `schema`), field path and message; the documents counted per variant."""
        findings = [
            {
                "file": str(f.file), "document": f.index, "object": f.ref, "rule": f.check.split(" ", 1)[0],
                "check": f.check, "path": f.path, "message": f.message,
            }
            for f in self.findings
        ]  # fmt: skip
        return json.dumps({"documents": dict(sorted(self.documents.items())), "findings": findings}, indent=2)

    def summary(self) -> str:
        per_variant = ", ".join(f"{v}: {n}" for v, n in sorted(self.documents.items()))
        kinds = Counter("schema" if f.check == "schema" else "policy" for f in self.findings)
        return (
            f"validated {sum(self.documents.values())} documents ({per_variant}); "
            f"{len(self.findings)} findings (schema: {kinds['schema']}, policy: {kinds['policy']})"
        )


def values_charts(site: Site, docs: list[Document]) -> dict[PurePosixPath, tuple[str, Path]]:
    """Each values file of the tree: the chart it is for and that chart's vendored archive."""
    keys: dict[tuple[str, str, str], str] = {}
    for variant in {d.variant for d in docs if d.variant in site.variants}:
        for ctx, component in variant_apps(site, resolve(site, variant)).members():
            if isinstance(component, ChartComponent):
                keys[(variant, ctx.cluster.name, component.name)] = component.chart
    archives = ChartStore().supply(site.versions.chart_pins(keys.values()))
    out = {}
    for doc in docs:
        key = keys.get((doc.variant, doc.cluster or "", doc.file.stem)) if doc.is_values else None
        if key is not None:
            out[doc.file] = (site.versions.charts[key].chart, archives[key].path)
    return out


# Schema problems by (file digest, document index), per set of schema sources: the same object under
# the same schemas validates the same. Kept for the process (tests validate many near-identical trees)
# and in the cache for the next one.
_SCHEMA_MEMO: dict[str, dict[tuple[bytes, int], list[tuple[str, str]]]] = {}
# Everything a schema verdict depends on beside the document: the checker, the typed host-config
# models and CRD stand-ins it reads, and the libraries. A change to any of them voids the cache.
_SCHEMA_SOURCES = (schemas, host_config, crd_standins, kube_yaml, fields)
_SCHEMA_CODE = hashlib.sha256(
    b"".join(Path(m.__file__).read_bytes() for m in _SCHEMA_SOURCES)
    + version("kubernetes-validate").encode()
    + version("jsonschema").encode()
).hexdigest()[:16]


def _sources_key(kubernetes: str, crd_dirs: list[Path], crds: Iterable[bytes]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((kubernetes, [str(d.resolve()) for d in crd_dirs], _SCHEMA_CODE)).encode())
    for crd in sorted(set(crds)):
        digest.update(crd)
    return digest.hexdigest()


def validate_tree(dist: Path, site: Site, crd_dirs: list[Path] | None = None) -> Report:
    crd_dirs = crd_dirs or []
    docs = load_tree(dist)
    catalog = SchemaCatalog(site.versions.kubernetes, crd_dirs)
    for doc in docs:
        if doc.kind == "CustomResourceDefinition":
            catalog.add_crd(doc.body)  # CRDs rendered into dist/ count too
    key = _sources_key(
        site.versions.kubernetes, crd_dirs, (d.digest for d in docs if d.kind == "CustomResourceDefinition")
    )
    if key not in _SCHEMA_MEMO:
        _SCHEMA_MEMO[key] = dict(read_stored("schema-problems", key) or {})
    memo = _SCHEMA_MEMO[key]
    known = len(memo)
    findings = []
    for doc in docs:
        if doc.variant not in site.variants:
            findings.append(
                Finding(doc.file, doc.index, doc.ref, "layout", "$", f"unknown variant {doc.variant!r}")
            )
            continue
        if doc.is_values:
            continue  # Helm values are checked by the typed models that write them
        at = (doc.digest, doc.index)
        if at not in memo:
            problems = (
                json_patch_problems(doc.body["_"]) if doc.is_kubeadm_patch else catalog.validate(doc.body)
            )
            memo[at] = [(p.path, p.message) for p in problems]
        findings += [
            Finding(doc.file, doc.index, doc.ref, "schema", path, message) for path, message in memo[at]
        ]
    if len(memo) > known:
        keep("schema-problems", key, memo)
    apps, expand_errors = applications(docs, dist_files(dist))
    context = Context(
        docs=docs,
        layouts={v: resolve(site, v) for v in site.variants},
        allow=allow_lists(site),
        root=dist,
        apps=apps,
        expand_errors=expand_errors,
        charts=values_charts(site, docs),
        secrets=site.secrets,
        site=site,
    )
    findings += [
        Finding(v.doc.file, v.doc.index, v.doc.ref, f"{r.id} {r.name}", v.path, v.message)
        for r, v in run_rules(context)
    ]
    return Report(findings, Counter(d.variant for d in docs))
