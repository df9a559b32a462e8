"""What each account of a cluster can do beyond its namespace, computed from the rendered RBAC.

An account is **cluster-admin-equivalent** when one of its grants turns into every other grant in a
step or two, whatever the admission policies say:
- it reads every Secret (the service-account tokens and credentials of every other account);
- it creates pods, or objects that make pods, where Pod Security does not hold (kube-system, or a
  namespace that enforces `privileged`), or in every namespace (a pod that names another namespace's
  privileged account);
- it patches pods there (a new image under the pod's account keeps its token);
- it creates tokens for other namespaces' accounts (`serviceaccounts/token`);
- it approves CertificateSigningRequests for a signer whose certificates authenticate to the API
  server (`kubernetes.io/kube-apiserver-client`: any user or group but `system:masters`);
- it rewrites admission: changes or deletes a ValidatingAdmissionPolicy, its binding or a webhook
  configuration (the API server exempts these objects from admission, so only RBAC guards them), or
  creates a webhook configuration (which sees and may change every object it matches);
- it binds or escalates any role, or binds `cluster-admin`, or impersonates.

An account **escapes its namespace** when it can steer where other workloads run or how their
namespaces are guarded: it patches Nodes (labels and taints the scheduler trusts), creates
PersistentVolumes (a hostPath volume bound to any claim), relabels Namespaces (their Pod Security
level, whether Kueue manages them) or updates CustomResourceDefinitions (a conversion webhook sees
every object of the kind).

Rules, subjects and aggregated ClusterRoles are read as the API server's authorizer reads them
(check/rbac.py); a group of service accounts stands for every account of its namespaces. A
RoleBinding in an account's own namespace is that namespace's business and not counted unless the
namespace is one where Pod Security does not hold.

Not modelled: the accounts operators create at run time, users and groups of people
(bound outside Git), and chains longer than one grant (an account that may create pods in its own
namespace under an account that is itself equivalent counts only through that account's own grants).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sitegen.check.rbac import Binding, Rbac, Rule, covers, granted_names, rule_allows, subject_namespaces
from sitegen.components.privilege import (
    APPROVES_CLIENT_CSRS,
    CHANGES_NODES,
    CREATES_VOLUMES,
    GRANTS_ANY_ROLE,
    MAKES_PRIVILEGED_PODS,
    MINTS_TOKENS,
    PATCHES_PRIVILEGED_PODS,
    READS_SECRETS,
    RELABELS_NAMESPACES,
    REWRITES_ADMISSION,
    UPDATES_CRDS,
)
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

KUBE_SYSTEM = "kube-system"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
POD_MAKERS = (
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
    ("apps", "daemonsets"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
)
ADMISSION = "admissionregistration.k8s.io"
ADMISSION_OBJECTS = (
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
)
WEBHOOKS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
# Signers kube-controller-manager signs whose certificates do not log in as whom the CSR asks:
# kubelet serving certificates carry no client usage; kube-apiserver-client-kubelet certificates
# are refused unless their subject is a node's (and NodeRestriction bounds a node).
SAFE_SIGNERS = frozenset({"kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet"})
ALL_POWERFUL_ROLES = frozenset({"cluster-admin", "admin", "edit"})
RBAC = "rbac.authorization.k8s.io"


def _unnamed(rule: Rule, group: str, resource: str, verbs: Iterable[str]) -> bool:
    """The rule grants `verbs` on every object of the resource."""
    return rule_allows(rule, verbs, group, resource)


@dataclass(frozen=True)
class Scope:
    """Where a binding's rules hold: every namespace, or one."""

    namespace: str | None  # None: cluster-wide (a ClusterRoleBinding)
    privileged: bool  # Pod Security does not hold there (or, cluster-wide, somewhere)


def primitives(rules: list[Mapping[str, Any]], scope: Scope) -> list[str]:
    """The primitives `rules` grant where `scope` says."""
    found = []
    cluster_wide = scope.namespace is None
    if cluster_wide and any(_unnamed(r, "", "secrets", ("get", "list", "watch")) for r in rules):
        found.append(READS_SECRETS)
    if scope.privileged and any(_unnamed(r, g, res, ("create",)) for r in rules for g, res in POD_MAKERS):
        found.append(MAKES_PRIVILEGED_PODS)
    if scope.privileged and any(_unnamed(r, "", "pods", ("patch", "update")) for r in rules):
        found.append(PATCHES_PRIVILEGED_PODS)
    if cluster_wide and any(_unnamed(r, "", "serviceaccounts/token", ("create",)) for r in rules):
        found.append(MINTS_TOKENS)
    signers = granted_names(rules, ("approve",), "certificates.k8s.io", "signers")
    if (
        cluster_wide
        and any(covers(r, ("update", "patch"), "certificates.k8s.io", "certificatesigningrequests/approval") for r in rules)
        and (signers - SAFE_SIGNERS)
    ):  # fmt: skip
        found.append(APPROVES_CLIENT_CSRS)
    if cluster_wide and (
        any(_unnamed(r, ADMISSION, res, ("update", "patch", "delete", "deletecollection")) for r in rules for res in ADMISSION_OBJECTS)
        or any(covers(r, ("create",), ADMISSION, res) for r in rules for res in WEBHOOKS)
    ):  # fmt: skip
        found.append(REWRITES_ADMISSION)
    bindable = granted_names(rules, ("bind", "escalate"), RBAC, "clusterroles") | (
        granted_names(rules, ("bind", "escalate"), RBAC, "roles") if not cluster_wide else set()
    )
    if (
        "*" in bindable
        or bindable & ALL_POWERFUL_ROLES
        or any(covers(r, ("impersonate",), g, res) for r in rules for g, res in (("", "serviceaccounts"), ("", "users"), ("", "groups"), ("authentication.k8s.io", "userextras/scopes")))
    ):  # fmt: skip
        found.append(GRANTS_ANY_ROLE)
    if cluster_wide and any(_unnamed(r, "", "nodes", ("patch", "update")) for r in rules):
        found.append(CHANGES_NODES)
    if cluster_wide and any(covers(r, ("create",), "", "persistentvolumes") for r in rules):
        found.append(CREATES_VOLUMES)
    if cluster_wide and any(_unnamed(r, "", "namespaces", ("patch", "update")) for r in rules):
        found.append(RELABELS_NAMESPACES)
    if cluster_wide and any(
        _unnamed(r, "apiextensions.k8s.io", "customresourcedefinitions", ("patch", "update")) for r in rules
    ):
        found.append(UPDATES_CRDS)
    return found


@dataclass(frozen=True)
class Power:
    account: str  # namespace/name
    primitive: str
    via: str  # the binding and the role
    doc: Document  # the binding


def _accounts(binding: Binding, namespaces: Iterable[str]) -> set[tuple[str, str]]:
    """The ServiceAccounts a binding names; a group of service accounts stands for `<namespace>/*`."""
    found: set[tuple[str, str]] = set()
    for subject in binding.subjects:
        if subject.get("kind") == "ServiceAccount":
            found.add((subject.get("namespace") or binding.namespace, subject.get("name", "")))
        group = subject_namespaces(subject)
        if group is not None:
            found |= {(ns, "*") for ns in (namespaces if group == "*" else (group,))}
    return found


def privileged_namespaces(docs: Iterable[Document]) -> set[str]:
    """Namespaces where Pod Security does not hold: kube-system, and those that enforce privileged."""
    found = {KUBE_SYSTEM}
    for doc in docs:
        if doc.kind == "Namespace":
            labels = dig(doc.body, "metadata", "labels") or {}
            if labels.get(PSA_ENFORCE, "privileged") == "privileged":
                found.add(doc.name)
    return found


def powers(docs: list[Document]) -> Iterator[Power]:
    """Every primitive of every ServiceAccount the cluster's rendered bindings name, first binding first."""
    privileged = privileged_namespaces(docs)
    namespaces = sorted({d.name for d in docs if d.kind == "Namespace"} | {KUBE_SYSTEM})
    documents = {(d.kind, d.namespace or "", d.name): d for d in docs}
    seen: set[tuple[str, str]] = set()
    for binding in sorted(Rbac(d.body for d in docs).bindings, key=lambda b: (b.kind, b.namespace, b.name)):
        scope = (
            Scope(None, True)
            if binding.cluster_wide
            else Scope(binding.namespace, binding.namespace in privileged)
        )
        found = primitives(list(binding.rules), scope)
        if not found:
            continue
        for namespace, name in sorted(_accounts(binding, namespaces)):
            if scope.namespace == namespace and not scope.privileged:
                continue
            account = f"{namespace}/{name}"
            for primitive in found:
                if (account, primitive) not in seen:
                    seen.add((account, primitive))
                    yield Power(
                        account,
                        primitive,
                        binding.via,
                        documents[(binding.kind, binding.namespace, binding.name)],
                    )


def by_account(found: Iterable[Power]) -> dict[str, list[Power]]:
    out: dict[str, list[Power]] = {}
    for power in found:
        out.setdefault(power.account, []).append(power)
    return out
