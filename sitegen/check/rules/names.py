"""Name rules: one object per kind and name in a cluster."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document


@rule(
    "UNQ-001",
    "unique-names",
    "two objects of one kind and name in a cluster overwrite each other when synced",
)
def _unique_names(ctx: Context) -> Iterator[Violation]:
    seen: dict[tuple[str, str, str, str, str, str], Document] = {}
    for doc in ctx.docs:
        if doc.is_host_file or doc.is_values or doc.cluster is None:
            continue
        key = (doc.variant, doc.cluster, doc.group, doc.kind, doc.namespace, doc.name)
        if key in seen:
            yield Violation(doc, "$.metadata.name", f"also defined in {seen[key].file}")
        else:
            seen[key] = doc
