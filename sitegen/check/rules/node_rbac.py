"""The rule over what an account on a node that runs tenant code may do to the cluster."""

from __future__ import annotations

from collections.abc import Iterator

from constructs.objects import pod_account
from sitegen.check.bringup.kube import pod_template
from sitegen.check.node_rbac import OPERATOR_MADE, grants, lands_on, service_account
from sitegen.check.placement import workloads
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document

# Custom resources from which an operator makes node agents that no placement block of ours names:
# the NicClusterPolicy's agents (DOCA driver, RDMA device plugin, IPoIB CNI, nv-ipam) run on every
# pool with fabric NICs, in the namespace of the operator that serves the kind.
OPERATOR_AGENT_KINDS = frozenset({"NicClusterPolicy"})


def _operator_namespaces(docs: list[Document]) -> dict[str, str]:
    """Custom kind -> the namespace of the Deployment beside its CRD (the operator that serves it)."""
    deployments = {d.file.parent: d.namespace for d in docs if d.kind == "Deployment" and d.namespace}
    return {
        d.body["spec"]["names"]["kind"]: deployments[d.file.parent]
        for d in docs
        if d.kind == "CustomResourceDefinition" and d.file.parent in deployments
    }


@rule(
    "RBC-001",
    "node-escalation",
    "root on a node that runs tenant code holds every token mounted there: none may read Secrets "
    "everywhere, make pods elsewhere, change Nodes or grant RBAC unless reviewed",
)
def _node_escalation(ctx: Context) -> Iterator[Violation]:
    if ctx.site is None:
        return
    fabric_pools = set(ctx.site.fabric.nics)
    reviewed = ctx.allow.node_rbac
    by_cluster: dict[tuple[str, str], list[Document]] = {}
    for doc in ctx.docs:
        if doc.cluster and not doc.is_values and not doc.is_host_file:
            by_cluster.setdefault((doc.variant, doc.cluster), []).append(doc)
    for (variant, cluster_name), docs in sorted(by_cluster.items()):
        cluster = ctx.cluster(docs[0])
        if cluster is None:
            continue
        tenant_pools = {p.name for p in cluster.pools if p.hardware.gpu}
        if not tenant_pools:
            continue
        operators = _operator_namespaces(docs)
        accounts: set[tuple[str, str]] = set()
        for workload in workloads(docs, ctx.allow.agents_of(variant, cluster_name)):
            if {p.name for p in lands_on(workload, cluster.pools)} & tenant_pools:
                account = service_account(workload, operators.get(workload.doc.kind))
                if account is not None:
                    accounts.add(account)
        for doc in docs:
            if doc.kind in OPERATOR_AGENT_KINDS and doc.kind in operators and tenant_pools & fabric_pools:
                accounts.add((operators[doc.kind], OPERATOR_MADE))
        for grant in grants(docs, accounts):
            if f"{grant.account}: {grant.capability}" in reviewed:
                continue
            yield Violation(
                grant.doc,
                "$.subjects",
                f"{grant.account} runs on the {', '.join(sorted(tenant_pools))} pool(s), where tenant code "
                f"runs, and {grant.capability} through {grant.via}; narrow the binding or review it in "
                "the component's node_rbac",
            )


@rule(
    "RBC-002",
    "agent-accounts",
    "a node agent runs under an account of its own: one it shares with a controller puts the "
    "controller's grants on every node the agent runs on",
)
def _agent_accounts(ctx: Context) -> Iterator[Violation]:
    controllers: dict[tuple[str, str | None, str, str], list[Document]] = {}
    agents: list[tuple[tuple[str, str | None, str, str], Document]] = []
    for doc in ctx.docs:
        if doc.is_values or doc.is_host_file:
            continue
        template = pod_template(doc.body)
        if template is None:
            continue
        account = (doc.variant, doc.cluster, doc.namespace or "", pod_account(dict(template.spec)))
        if doc.kind == "DaemonSet":
            agents.append((account, doc))
        else:
            controllers.setdefault(account, []).append(doc)
    for account, doc in agents:
        sharing = controllers.get(account)
        if sharing:
            names = ", ".join(sorted(f"{d.kind} {d.name}" for d in sharing))
            yield Violation(
                doc,
                "$.spec.template.spec.serviceAccountName",
                f"node agent runs as {account[2]}/{account[3]}, the account of {names}",
            )
