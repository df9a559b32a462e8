"""`sitegen validate`: every document of dist/ against its schema, then every policy rule."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sitegen.check.allowlists import allow_lists
from sitegen.check.appsets import applications
from sitegen.check.rules import Context, run_rules
from sitegen.check.schemas import SchemaCatalog
from sitegen.check.tree import load_tree
from sitegen.model import Site, resolve


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

    def summary(self) -> str:
        per_variant = ", ".join(f"{v}: {n}" for v, n in sorted(self.documents.items()))
        kinds = Counter("schema" if f.check == "schema" else "policy" for f in self.findings)
        return (
            f"validated {sum(self.documents.values())} documents ({per_variant}); "
            f"{len(self.findings)} findings (schema: {kinds['schema']}, policy: {kinds['policy']})"
        )


def validate_tree(dist: Path, site: Site, crd_dirs: list[Path]) -> Report:
    docs = load_tree(dist)
    catalog = SchemaCatalog(site.versions.kubernetes, crd_dirs)
    for doc in docs:
        catalog.add_crd(doc.body)  # CRDs rendered into dist/ count too
    findings = []
    for doc in docs:
        if doc.variant not in site.variants:
            findings.append(
                Finding(doc.file, doc.index, doc.ref, "layout", "$", f"unknown variant {doc.variant!r}")
            )
            continue
        if doc.is_values:
            continue  # Helm values are checked by the typed models that write them
        findings += [
            Finding(doc.file, doc.index, doc.ref, "schema", p.path, p.message)
            for p in catalog.validate(doc.body)
        ]
    apps, expand_errors = applications(docs)
    context = Context(
        docs=docs,
        layouts={v: resolve(site, v) for v in site.variants},
        allow=allow_lists(site),
        root=dist,
        apps=apps,
        expand_errors=expand_errors,
    )
    findings += [
        Finding(v.doc.file, v.doc.index, v.doc.ref, f"{r.id} {r.name}", v.path, v.message)
        for r, v in run_rules(context)
    ]
    return Report(findings, Counter(d.variant for d in docs))
