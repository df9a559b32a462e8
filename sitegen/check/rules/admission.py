"""The cluster refuses what validate refuses, and nothing the site itself applies: every object of dist/
that a shipped ValidatingAdmissionPolicy matches passes it, as its cluster's applier creates it."""

from __future__ import annotations

from collections.abc import Iterator

from constructs.argocd import application_name, tracked
from sitegen.check.admission_policy import POD_MAKERS, Policy, Request, admitted_pod, denying_policies
from sitegen.check.bringup.kube import pod_template
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.components.platform.admission_policies import AdmissionPolicies
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

# kubeadm's admin.conf: what the RUNBOOK's kubectl applies bootstrap/ as
RUNBOOK_ADMIN = Request("kubernetes-admin", ("kubeadm:cluster-admins", "system:authenticated"))


def applier(ctx: Context, doc: Document) -> Request:
    """Who creates the object: Argo CD (the hub's controller, a spoke's manager), or the RUNBOOK."""
    if doc.cluster is None or ctx.site is None:
        return RUNBOOK_ADMIN
    layout = ctx.layouts.get(doc.variant)
    hub = layout is not None and doc.cluster == layout.hub.name
    return Request(AdmissionPolicies.applier(ctx.site.gitops.argocd.namespace, hub=hub))


def as_applied(doc: Document) -> dict:
    """The object as it reaches the API server: an app's with Argo CD's tracking annotation."""
    if doc.cluster is not None and doc.app is not None:
        return tracked(doc.body, application_name(doc.cluster, doc.app))
    return doc.body


@rule(
    "ADM-001",
    "admission-policies",
    "what the cluster's ValidatingAdmissionPolicies refuse never reaches Git: a sync the API server "
    "refuses stalls every app after it",
)
def _admitted(ctx: Context) -> Iterator[Violation]:
    by_cluster: dict[tuple[str, str | None], list[Document]] = {}
    for doc in ctx.docs:
        if not doc.is_values and not doc.is_host_file:
            by_cluster.setdefault((doc.variant, doc.cluster), []).append(doc)
    for (variant, cluster), docs in sorted(
        by_cluster.items(), key=lambda item: (item[0][0], item[0][1] or "")
    ):
        hub = ctx.layouts[variant].hub.name if variant in ctx.layouts else None
        policies = denying_policies(d.body for d in by_cluster.get((variant, cluster or hub), []))
        if not policies:
            continue
        namespaces = {
            d.name: dig(d.body, "metadata", "labels") or {}
            for d in by_cluster.get((variant, cluster or hub), []) + by_cluster.get((variant, None), [])
            if d.kind == "Namespace"
        }
        for doc in docs:  # bootstrap/ (no cluster) goes to the hub
            labels = namespaces.get(doc.namespace, {}) if doc.namespace else None
            for policy in policies:
                if not policy.matches(doc.body, labels, "CREATE"):
                    continue
                refused = policy.refusal(as_applied(doc), applier(ctx, doc))
                if refused:
                    yield Violation(doc, "$", f"the API server refuses it: {refused}")
            yield from _pods_refused(doc, labels, policies)


def _pods_refused(
    doc: Document, labels: dict[str, str] | None, policies: list[Policy]
) -> Iterator[Violation]:
    """A workload's pods, as its controller creates them."""
    template = pod_template(doc.body) if doc.kind in POD_MAKERS else None
    if template is None:
        return
    pod = admitted_pod(template.namespace, template.name, template.labels, template.spec)
    for policy in policies:
        if policy.matches(pod, labels, "CREATE"):
            refused = policy.refusal(pod, Request(POD_MAKERS[doc.kind]))
            if refused:
                yield Violation(doc, "$.spec", f"the API server refuses its pods: {refused}")
