"""The maintenance budgets `plan` and the RUNBOOK promise, held by PodDisruptionBudgets in the tree."""

from __future__ import annotations

from collections.abc import Iterator

from sitegen.check.bringup.kube import label_selector_matches
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document


def _selects(budget: Document, labels: dict[str, str]) -> bool:
    selector = budget.body["spec"].get("selector")
    return bool(selector) and label_selector_matches(selector, labels)  # an empty one selects nothing


def _keeps_every_replica(budget: Document, replicas: int) -> bool:
    spec = budget.body["spec"]
    return spec.get("maxUnavailable") in (0, "0", "0%") or spec.get("minAvailable") in (replicas, "100%")


@rule(
    "PDB-001",
    "serving-kept",
    "the GPU pool's budget keeps a node per model-server replica: a drain must not evict one, or the "
    "budget `plan` prints is a promise nothing holds",
)
def _serving_kept(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    served = {m.name for m in ctx.site.services.serving.models}
    namespace = ctx.site.services.serving.tenant
    budgets = [d for d in ctx.docs if d.kind == "PodDisruptionBudget" and d.namespace == namespace]
    for doc in ctx.docs:
        if doc.kind != "StatefulSet" or doc.namespace != namespace or doc.name not in served:
            continue
        labels = doc.body["spec"]["template"]["metadata"].get("labels", {})
        replicas = doc.body["spec"].get("replicas", 1)
        if not any(
            b.variant == doc.variant and b.cluster == doc.cluster and _selects(b, labels)
            and _keeps_every_replica(b, replicas)
            for b in budgets
        ):  # fmt: skip
            yield Violation(doc, "$.spec.replicas", f"no PodDisruptionBudget keeps its {replicas} "
                            "replica(s): a drain inside the GPU pool's maintenance budget would evict it")  # fmt: skip
