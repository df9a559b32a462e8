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
                ref = f"Secret/{doc.namespace}/{doc.name}"
                filled = sorted(
                    k
                    for k, v in (doc.body.get(key) or {}).items()
                    if v and f"{ref}:{k}" not in ctx.allow.plain_secret_data
                )
                if filled:
                    yield Violation(doc, f"$.{key}", f"a Secret with values in git: {', '.join(filled)}")
