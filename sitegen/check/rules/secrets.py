"""Secret rules: no secret value in git."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule


@rule(
    "SEC-001",
    "no-secret-data",
    "secret values never enter git; reference them (ExternalSecret, existing secrets)",
)
def _no_secret_data(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind == "Secret" and doc.group == "":
            for key in ("data", "stringData"):
                if doc.body.get(key):
                    yield Violation(doc, f"$.{key}", "a Secret with values in git")
