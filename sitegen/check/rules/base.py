"""What a policy rule is: an id, a name, a one-line rationale and a check over the whole tree."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from sitegen.check.allowlists import AllowLists
from sitegen.check.appsets import ExpandedApp, ExpandError
from sitegen.check.placement import Workload, workloads
from sitegen.components.base import NodeAgent
from sitegen.model import ClusterLayout, PoolLayout, Secrets, Site, VariantLayout
from sitegen.tree.documents import Document


@dataclass(frozen=True)
class Violation:
    doc: Document
    path: str
    message: str


@dataclass(frozen=True)
class Context:
    docs: list[Document]
    layouts: dict[str, VariantLayout]
    allow: AllowLists
    root: Path = Path("dist")
    apps: list[ExpandedApp] = field(default_factory=list)
    expand_errors: list[tuple[Document, ExpandError]] = field(default_factory=list)
    charts: Mapping[PurePosixPath, tuple[str, Path]] = field(
        default_factory=dict
    )  # values file -> chart, archive
    secrets: Secrets | None = None  # the site vault's settings (roles are named after namespaces)
    site: Site | None = None  # for rules that compare the output with what the components declare

    def cluster(self, doc: Document) -> ClusterLayout | None:
        layout = self.layouts.get(doc.variant)
        if layout is None or doc.cluster is None:
            return None
        return next((c for c in layout.clusters if c.name == doc.cluster), None)

    def pools(self, doc: Document) -> tuple[PoolLayout, ...]:
        cluster = self.cluster(doc)
        return cluster.pools if cluster else ()

    def agents(self, doc: Document) -> Mapping[str, NodeAgent]:
        return self.allow.agents_of(doc.variant, doc.cluster)

    def workloads(self, scheduled_only: bool = True) -> Iterator[Workload]:
        return iter(self._workloads[scheduled_only])

    @cached_property
    def _workloads(self) -> dict[bool, list[Workload]]:
        """Every pod template, found once for all the rules that read them."""
        return {
            scheduled: [w for doc in self.docs for w in workloads([doc], self.agents(doc), scheduled)]
            for scheduled in (True, False)
        }

    @cached_property
    def cluster_objects(self) -> dict[tuple[str, str], list[Document]]:
        """By (variant, cluster), the objects it receives: neither values files nor host files."""
        found: dict[tuple[str, str], list[Document]] = {}
        for doc in self.docs:
            if doc.cluster is not None and not doc.is_values and not doc.is_host_file:
                found.setdefault((doc.variant, doc.cluster), []).append(doc)
        return found

    def docs_under(self, folder: str) -> list[Document]:
        """The documents of files below `folder` (a dist-relative path, as Applications name them)."""
        paths, docs = self._by_path
        prefix = folder.rstrip("/") + "/"
        start = bisect.bisect_left(paths, prefix)
        end = bisect.bisect_left(paths, prefix[:-1] + "0")  # "0" sorts right after "/"
        return docs[start:end]

    @cached_property
    def _by_path(self) -> tuple[list[str], list[Document]]:
        ordered = sorted(self.docs, key=lambda d: (d.file.as_posix(), d.index))
        return [d.file.as_posix() for d in ordered], ordered


Check = Callable[[Context], Iterator[Violation]]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    rationale: str
    check: Check


RULES: list[Rule] = []


def rule(id: str, name: str, rationale: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        taken = next((r for r in RULES if r.id == id), None)
        if taken is not None:  # a finding's id must say which rule fired
            raise ValueError(f"rule id {id} is taken by {taken.name}")
        RULES.append(Rule(id, name, rationale, check))
        return check

    return register
