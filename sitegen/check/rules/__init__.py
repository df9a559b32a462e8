"""The policy rules `validate` runs after the schemas, by kind: placement, Pod Security, secrets, pins,
names, Applications. Each has an id, a name and a one-line rationale (`sitegen rules`)."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.rules import (  # noqa: F401
    admission,
    applications,
    backups,
    budgets,
    certificates,
    data,
    delivery,
    fabric,
    front_doors,
    kueue,
    names,
    network,
    node_rbac,
    pins,
    placement,
    pod_security,
    power,
    s3_paths,
    scrape,
    secrets,
    values,
)
from sitegen.check.rules.base import RULES, Context, Rule, Violation

__all__ = ["RULES", "Context", "Rule", "Violation", "run_rules"]


def run_rules(ctx: Context) -> Iterator[tuple[Rule, Violation]]:
    for r in RULES:
        for violation in r.check(ctx):
            yield r, violation
