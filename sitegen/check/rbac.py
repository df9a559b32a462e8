"""Kubernetes' RBAC authorizer over a cluster's rendered roles and bindings: the one reading of RBAC that
the static rules (power.py, node_rbac.py) and the bring-up (a controller's API calls, Argo CD's own
rights, the CSR approvers) share.

Rules are read as the authorizer of v1.35 reads them (plugin/pkg/auth/authorizer/rbac/rbac.go,
pkg/apis/rbac/helpers.go `VerbMatches`, `APIGroupMatches`, `ResourceMatches`, `ResourceNameMatches`):
- `*` matches every verb, API group and resource; a resource `<base>/*` matches every subresource of
  the base, `*/<sub>` that subresource of every base;
- a rule with `resourceNames` grants a request only when the request names one of them (a create or a
  list names nothing, so such a rule never grants them);
- subjects (rbac.go `appliesToUser`): a ServiceAccount (a RoleBinding's subject without a namespace
  is in the binding's), the user `system:serviceaccount:<namespace>:<name>`, and the groups every
  service account is in: `system:serviceaccounts`, `system:serviceaccounts:<namespace>`,
  `system:authenticated`;
- a ClusterRole with an `aggregationRule` holds the rules of every ClusterRole its selectors match (the
  controller manager's clusterrole-aggregation controller writes them in);
- the bootstrap ClusterRoles every cluster has (bootstrappolicy/policy.go) are known by name as far as
  dist/ binds them: nothing in dist/ renders them.

Not modelled: users and groups of people (bound outside Git), impersonation chains, the Node and
Webhook authorizers, and non-resource URLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sitegen.check.labels import label_selector_matches
from sitegen.tree.fields import dig

Rule = Mapping[str, Any]
Account = tuple[str, str]  # a ServiceAccount's namespace and name

EVERYTHING: Rule = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
BOOTSTRAP_CLUSTER_ROLES: Mapping[str, tuple[Rule, ...]] = {
    "cluster-admin": (EVERYTHING,),
    "system:auth-delegator": (
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ),
}
SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", "system:authenticated")


def resource_matches(granted: Iterable[str], resource: str) -> bool:
    base, _, sub = resource.partition("/")
    return any(g in ("*", resource) or (sub and g in (f"{base}/*", f"*/{sub}")) for g in granted)


def covers(rule: Rule, verbs: Iterable[str], group: str, resource: str) -> bool:
    """The rule names one of `verbs` on the resource, whatever its resourceNames say."""
    return bool(
        {"*", group} & set(rule.get("apiGroups") or [])
        and resource_matches(rule.get("resources") or [], resource)
        and {"*", *verbs} & set(rule.get("verbs") or [])
    )


def rule_allows(rule: Rule, verbs: Iterable[str], group: str, resource: str, name: str | None = None) -> bool:
    """The rule grants one of `verbs` on the object `name`, or on every object when `name` is None."""
    names = rule.get("resourceNames")
    return covers(rule, verbs, group, resource) and (not names or (name is not None and name in names))


def allows(
    rules: Iterable[Rule], verbs: Iterable[str], group: str, resource: str, name: str | None = None
) -> bool:
    verbs = tuple(verbs)
    return any(rule_allows(r, verbs, group, resource, name) for r in rules)


def granted_names(rules: Iterable[Rule], verbs: Iterable[str], group: str, resource: str) -> set[str]:
    """The object names the rules grant `verbs` on; `*` for every name."""
    verbs = tuple(verbs)
    found: set[str] = set()
    for rule in rules:
        if covers(rule, verbs, group, resource):
            found |= set(rule.get("resourceNames") or ["*"])
    return found


def subject_is(subject: Mapping[str, Any], account: Account, binding_namespace: str) -> bool:
    """The binding's subject applies to the ServiceAccount."""
    ns, name = account
    kind, who = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return who == name and (subject.get("namespace") or binding_namespace) == ns
    if kind == "Group":
        return who in (*SERVICE_ACCOUNT_GROUPS, f"system:serviceaccounts:{ns}")
    return kind == "User" and who == f"system:serviceaccount:{ns}:{name}"


def subject_namespaces(subject: Mapping[str, Any]) -> str | None:
    """The namespace whose every ServiceAccount a Group subject stands for; `*` for every namespace;
    None for a subject that is not such a group."""
    if subject.get("kind") != "Group":
        return None
    who = str(subject.get("name", ""))
    if who in SERVICE_ACCOUNT_GROUPS:
        return "*"
    return who.removeprefix("system:serviceaccounts:") if who.startswith("system:serviceaccounts:") else None


@dataclass(frozen=True)
class Binding:
    """A RoleBinding or ClusterRoleBinding with the rules of the role it names."""

    kind: str
    namespace: str  # "" for a ClusterRoleBinding
    name: str
    body: Mapping[str, Any]
    rules: tuple[Rule, ...]

    @property
    def cluster_wide(self) -> bool:
        return self.kind == "ClusterRoleBinding"

    @property
    def role(self) -> str:
        ref = self.body.get("roleRef") or {}
        return f"{ref.get('kind')} {ref.get('name')}"

    @property
    def via(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} -> {self.role}"

    def applies_to(self, account: Account) -> bool:
        return any(subject_is(s, account, self.namespace) for s in self.body.get("subjects") or [])

    @property
    def subjects(self) -> list[Mapping[str, Any]]:
        return list(self.body.get("subjects") or [])


class Rbac:
    """The roles and bindings of one cluster, read once."""

    def __init__(self, bodies: Iterable[Mapping[str, Any]]) -> None:
        by_kind: dict[str, list[Mapping[str, Any]]] = {}
        for body in bodies:
            if body.get("kind") in ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"):
                by_kind.setdefault(str(body["kind"]), []).append(body)
        cluster_roles = {_name(b): b for b in by_kind.get("ClusterRole", [])}
        self._cluster_roles = {name: _aggregated(body, cluster_roles) for name, body in cluster_roles.items()}
        self._roles = {
            (_namespace(b), _name(b)): tuple(b.get("rules") or []) for b in by_kind.get("Role", [])
        }
        self.bindings = [
            Binding(str(b["kind"]), _namespace(b), _name(b), b, self._role_rules(b, _namespace(b)))
            for kind in ("ClusterRoleBinding", "RoleBinding")
            for b in by_kind.get(kind, [])
        ]
        self._by_subject = _subject_index(self.bindings)

    def cluster_role(self, name: str) -> tuple[Rule, ...]:
        found = self._cluster_roles.get(name)
        return found if found is not None else BOOTSTRAP_CLUSTER_ROLES.get(name, ())

    def _role_rules(self, binding: Mapping[str, Any], namespace: str) -> tuple[Rule, ...]:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            return self.cluster_role(str(ref.get("name", "")))
        return self._roles.get((namespace, str(ref.get("name", ""))), ())

    def bindings_of(self, account: Account, namespace: str | None = None) -> Iterator[Binding]:
        """The bindings that apply to the account cluster-wide, and in `namespace` when given, in the
        order of `bindings`."""
        ns, name = account
        index = self._by_subject
        found = {
            *index.get(("ServiceAccount", ns, name), ()),
            *index.get(("User", "", f"system:serviceaccount:{ns}:{name}"), ()),
            *index.get(("Group", "", f"system:serviceaccounts:{ns}"), ()),
            *(i for group in SERVICE_ACCOUNT_GROUPS for i in index.get(("Group", "", group), ())),
        }
        for i in sorted(found):
            binding = self.bindings[i]
            if binding.cluster_wide or binding.namespace == namespace:
                yield binding

    def rules_of(self, account: Account, namespace: str | None = None) -> list[Rule]:
        return [rule for binding in self.bindings_of(account, namespace) for rule in binding.rules]

    def may(
        self,
        account: Account,
        verb: str,
        group: str,
        resource: str,
        namespace: str | None = None,
        name: str | None = None,
    ) -> bool:
        """Whether the account may `verb` the resource (in `namespace`, or cluster-wide when None), on
        the object `name` or on every object."""
        return allows(self.rules_of(account, namespace), (verb,), group, resource, name)


# The two reads every binding check makes (the bring-up: about 150,000 per variant): spelled out, not
# through dig, whose call costs twice the two lookups.
def _name(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("name", ""))


def _namespace(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("namespace", ""))


def _subject_index(bindings: list[Binding]) -> dict[tuple[str, str, str], list[int]]:
    """The positions of the bindings by what their subjects name, as `subject_is` matches them: a
    ServiceAccount by its namespace (the binding's when the subject names none) and name, a User or
    Group by its name. The bring-up asks for an account's bindings about 17,000 times per variant."""
    index: dict[tuple[str, str, str], list[int]] = {}
    for i, binding in enumerate(bindings):
        for subject in binding.subjects:
            kind, who = str(subject.get("kind")), str(subject.get("name"))
            ns = (subject.get("namespace") or binding.namespace) if kind == "ServiceAccount" else ""
            index.setdefault((kind, str(ns), who), []).append(i)
    return index


def _aggregated(role: Mapping[str, Any], every: Mapping[str, Mapping[str, Any]]) -> tuple[Rule, ...]:
    selectors = dig(role, "aggregationRule", "clusterRoleSelectors") or []
    if not selectors:
        return tuple(role.get("rules") or [])
    return tuple(
        rule
        for other in every.values()
        if any(label_selector_matches(s, dig(other, "metadata", "labels") or {}) for s in selectors)
        for rule in other.get("rules") or []
    )
