"""What an identity on a node that runs tenant code may do to the whole cluster, from the rendered RBAC.

Tenant code runs on the GPU pools (Kueue places every tenant job there). Root on one of those nodes
reads every token mounted on it, so each ServiceAccount of a pod that may land there is only as safe
as what its bindings grant. This module computes, per cluster, the grants that turn one node into
the cluster: reading Secrets everywhere, creating pods (or their controllers) outside its own
namespace, changing Nodes, and granting RBAC (bind, escalate, impersonate, new bindings).

It reads ClusterRoles, Roles and their bindings as the API server's authorizer does (check/rbac.py:
subjects, groups of service accounts, aggregated ClusterRoles). Not modelled: the pods operators
create at run time (the GPU Operator's driver and device plugin run as ServiceAccounts
the operator makes: their RBAC is the operator's, reviewed as the operator's own), and the kubelet's
node credentials (bounded by the NodeRestriction admission plugin, which kubeadm enables).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from constructs.objects import pod_account
from sitegen.check.placement import Workload, taints_of, targeted_pools, tolerated_taints
from sitegen.check.rbac import Rbac, Rule, rule_allows
from sitegen.components.node_access import CHANGES_NODES, CREATES_PODS, GRANTS_RBAC, READS_SECRETS
from sitegen.model import PoolLayout
from sitegen.tree.documents import Document

CAPABILITIES = (READS_SECRETS, CREATES_PODS, CHANGES_NODES, GRANTS_RBAC)

_POD_MAKERS = (
    ("", "pods"),
    ("apps", "deployments"),
    ("apps", "daemonsets"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
)


@dataclass(frozen=True)
class Grant:
    account: str  # namespace/name
    capability: str
    via: str  # the binding and role that grant it
    doc: Document  # the binding


def _allows(rule: Rule, group: str, resource: str, verbs: Iterable[str]) -> bool:
    return rule_allows(rule, verbs, group, resource)


def capabilities(rules: list[Mapping[str, Any]], cluster_wide: bool) -> list[str]:
    """What `rules` grant, bound cluster-wide or in a namespace other than the identity's own."""
    found = []
    if cluster_wide and any(_allows(r, "", "secrets", ("get", "list", "watch")) for r in rules):
        found.append(READS_SECRETS)
    if any(_allows(r, g, res, ("create",)) for r in rules for g, res in _POD_MAKERS):
        found.append(CREATES_PODS)
    if cluster_wide and any(_allows(r, "", "nodes", ("patch", "update")) for r in rules):
        found.append(CHANGES_NODES)
    rbac = "rbac.authorization.k8s.io"
    if (
        any(_allows(r, rbac, res, ("bind", "escalate")) for r in rules for res in ("roles", "clusterroles"))
        or any(
            _allows(r, rbac, res, ("create",))
            for r in rules
            for res in ("rolebindings", "clusterrolebindings")
        )
        or any(
            _allows(r, g, res, ("impersonate",))
            for r in rules
            for g, res in (("", "serviceaccounts"), ("", "users"), ("", "groups"))
        )
    ):
        found.append(GRANTS_RBAC)
    return found


# The pods an operator makes from a custom resource (a NicClusterPolicy's agents) run in the operator's
# namespace under accounts it names at run time: only what its namespace's group is granted is known.
OPERATOR_MADE = "(accounts its operator makes)"


def service_account(workload: Workload, operator_namespace: str | None = None) -> tuple[str, str] | None:
    if workload.kind == "CustomResource":
        return (operator_namespace, OPERATOR_MADE) if operator_namespace else None
    spec = workload.spec
    return (
        workload.doc.namespace or "",
        pod_account(spec),
    )


def lands_on(workload: Workload, pools: tuple[PoolLayout, ...]) -> list[PoolLayout]:
    placement = workload.placement
    return [
        p for p in targeted_pools(placement, pools) if taints_of([p]) <= tolerated_taints(placement, (p,))
    ]


def grants(docs: list[Document], accounts: Iterable[tuple[str, str]]) -> Iterator[Grant]:
    """The dangerous grants of `accounts` in the documents of one cluster."""
    documents = {(d.kind, d.namespace or "", d.name): d for d in docs}
    bindings = Rbac(d.body for d in docs).bindings
    for account in sorted(set(accounts)):
        seen: set[str] = set()
        for binding in bindings:
            if not binding.applies_to(account):
                continue
            if not binding.cluster_wide and binding.namespace == account[0]:
                continue  # its own namespace: what a tenant may do there too
            for capability in capabilities(list(binding.rules), binding.cluster_wide):
                if capability in seen:
                    continue
                seen.add(capability)
                doc = documents[(binding.kind, binding.namespace, binding.name)]
                yield Grant(f"{account[0]}/{account[1]}", capability, binding.via, doc)
