"""The rules over power beyond a namespace: every account that holds a primitive of check/power.py
is reviewed by its component, and no CSI driver serves inline volumes."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.power import by_account, powers
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


def _clusters(ctx: Context) -> dict[tuple[str, str], list[Document]]:
    found: dict[tuple[str, str], list[Document]] = {}
    for doc in ctx.docs:
        if doc.cluster and not doc.is_values and not doc.is_host_file:
            found.setdefault((doc.variant, doc.cluster), []).append(doc)
    return found


@rule(
    "RBC-003",
    "reviewed-power",
    "an account that is cluster-admin-equivalent or escapes its namespace (secrets everywhere, pods "
    "where Pod Security does not hold, tokens, CSR approval, admission writes, bind/escalate, Nodes, "
    "PersistentVolumes, Namespaces, CRDs) holds it only with its component's reviewed reason",
)
def _reviewed_power(ctx: Context) -> Iterator[Violation]:
    reviewed = ctx.allow.powers
    for _, docs in sorted(_clusters(ctx).items()):
        for account, found in sorted(by_account(powers(docs)).items()):
            review = reviewed.get(account)
            for power in found:
                if review is not None and power.primitive in review.primitives:
                    continue
                yield Violation(
                    power.doc,
                    "$.subjects",
                    f"{account} {power.primitive} through {power.via}; narrow the role with a patch "
                    "(components/privilege.py: narrow_rule) or review it in the component's powers()",
                )


@rule(
    "VOL-001",
    "no-inline-csi",
    "a CSI driver that serves inline (ephemeral) volumes lets any pod reach its backend with no claim, "
    "StorageClass or quota: drivers serve PersistentVolumes only",
)
def _no_inline_csi(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind == "CSIDriver" and "Ephemeral" in dig(
            doc.body, "spec", "volumeLifecycleModes", default=[]
        ):
            yield Violation(
                doc,
                "$.spec.volumeLifecycleModes",
                "serves Ephemeral (inline) volumes; patch it to Persistent (components/privilege.py: "
                "persistent_only)",
            )
