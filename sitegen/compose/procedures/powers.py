"""The accounts that hold power beyond their namespace, per cluster, with the reason each component
gives (`Component.powers`; validate's RBC-003 refuses any the rendered RBAC grants without one)."""

from __future__ import annotations

from sitegen.components.privilege import PRIMITIVES, Reviewed
from sitegen.compose.apps import VariantApps
from sitegen.tree.runbook import Runbook


def account_powers(book: Runbook, apps: VariantApps) -> None:
    book.part("Accounts with power beyond their namespace")
    book.write(
        "Whoever holds one of these accounts' tokens holds what the list says; those that are "
        "cluster-admin-equivalent (every Secret, pods where Pod Security does not hold, tokens, API client "
        "certificates, admission writes, any role) are as strong as `cluster-admin`. Audit their pods and "
        "images as you would a cluster administrator; a chart bump that grants more stops `make test` "
        "until the component narrows or reviews it.",
        "",
    )
    for ctx in apps.contexts:
        reviewed = sorted((a, r) for c in ctx.components for a, r in c.powers(ctx).items())
        if not reviewed:
            continue
        book.write(f"On `{ctx.cluster.name}`:", "", "| account | holds | why |", "|---|---|---|")
        book.write(*(f"| `{a}` | {_holds(r)} | {r.why} |" for a, r in reviewed), "")


def _holds(review: Reviewed) -> str:
    if set(review.primitives) == set(PRIMITIVES):
        return "everything (cluster-admin)"
    return "; ".join(review.primitives)
