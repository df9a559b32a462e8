"""What a controller needs from its cluster and hosts once its pods run: the volume groups of its
node's host, the RBAC of its API calls, and a path through its namespace's network policies to the API
server and the vault. The facts are declared with each component (`Component.runtime_needs`,
components/runtime_needs.py), each with its upstream source at the pinned version.

- Volume groups (`ON_POD`, `volume_group_refusal`): a node agent that declares `HostVolumeGroups`
  (TopoLVM's lvmd, v0.41.0 cmd/lvmd/app/root.go) exits on a node whose host lacks a volume group its
  mounted configuration names ("volume group not found"): the DaemonSet is never ready. The runbook's
  host steps make them (`vgcreate`, storage.py keeps them per pool).
- RBAC (`ON_POD`, `rbac_refusal`): every `ApiCall` made at START (its informers' list and watch) must
  be granted to the ServiceAccount of the workload's pods, as Kubernetes' RBAC authorizer reads the
  rules (check/rbac.py, shared with the static rules): ClusterRoleBindings, and for a call in a
  namespace the RoleBindings there. Refused, the API server answers 403 ("... is forbidden: User
  ... cannot <verb> resource ..."): the caches never sync (controller-runtime's manager exits, a
  readyz informer check fails) and its pods are not Ready. A call at VAULT_LOGIN (External Secrets'
  token for a store's account) is judged per SecretStore (`vault_login_refusal`, from secrets.py).
- API server egress (`ON_POD`, `api_egress_refusal`): a workload of a component that `talks_to_api`
  (not on the host network, which no pod policy governs) whose namespace's policies enforce egress
  must be let out to the API server, at kubeadm's bindPort 6443 (Cilium applies policy after the
  kubernetes Service is translated to its endpoints). Cilium enforces NetworkPolicy and
  CiliumNetworkPolicy together: a pod is under egress enforcement once a NetworkPolicy with policyType
  Egress, or a CiliumNetworkPolicy with an egress section, selects it; then a connection passes when
  a rule of any of them allows it. The API server answers to the entities `kube-apiserver`, `cluster`,
  `all`, and `remote-node` (kubeadm runs it on the control-plane hosts, whose addresses carry that
  identity too); a NetworkPolicy reaches it only by a rule without peers (an ipBlock does not select
  cluster nodes under Cilium's default policy-cidr-match-mode).
- Vault egress (`vault_login_refusal`): the workloads a component declares as reading the vault
  (External Secrets' controller) must resolve its name (kube-dns, UDP 53) and reach its address (the
  entity `world` or `all`, a toFQDNs rule that names it, or any CIDR rule: the vault's address is not
  in dist/, so a CIDR rule is taken to cover it); else every SecretStore fails to validate.

In-cluster clients reach the API server at the address the kubelet puts in KUBERNETES_SERVICE_HOST,
so reaching it needs no DNS. Not modelled: a running controller that a policy or RBAC change made later
cuts off (pods already Ready stay so here), calls a controller makes per object (a refused patch of one
Node, say), egressDeny rules, CiliumClusterwideNetworkPolicies (dist/ has none), named ports, Roles of
other namespaces for calls a controller makes across namespaces (only a ClusterRoleBinding counts),
users and impersonation; a volume group over the wrong disks.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import yaml

from constructs.objects import pod_account
from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.check.labels import label_selector_matches
from sitegen.check.rbac import allows
from sitegen.components.base import Component
from sitegen.components.catalog import COMPONENTS
from sitegen.components.runtime_needs import START, VAULT_LOGIN, ApiCall, HostVolumeGroups
from sitegen.tree.fields import dig

API_SERVER_PORT = 6443  # kubeadm's localAPIEndpoint.bindPort, which dist/'s configurations keep
NAMESPACE_LABEL = "io.kubernetes.pod.namespace"  # the label Cilium gives every endpoint
KUBE_DNS = ("kube-system", {"k8s-app": "kube-dns"})  # the pods the kube-dns Service selects
_BY_APP: dict[str, type[Component]] = {kind.name: kind for kind in COMPONENTS}


def component_of(w: Workload, cluster: ClusterObjects) -> type[Component] | None:
    """The component whose Application owns the workload (`<cluster>-<component>`)."""
    prefix = f"{cluster.name}-"
    return _BY_APP.get(w.owner[len(prefix) :]) if w.owner.startswith(prefix) else None


# ---- RBAC --------------------------------------------------------------------------------------
def grants(rules: Iterable[Mapping[str, Any]], call: ApiCall) -> bool:
    return allows(rules, (call.verb,), call.group, call.resource, call.name)


def forbidden(account: tuple[str, str], call: ApiCall, namespace: str | None) -> str:
    """The API server's 403 message (k8s.io/apiserver endpoints/handlers/responsewriters)."""
    user = f"system:serviceaccount:{account[0]}:{account[1]}"
    qualified = call.resource.split("/")[0] + (f".{call.group}" if call.group else "")
    what = f'{qualified} "{call.name}"' if call.name else qualified
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{what} is forbidden: User "{user}" cannot {call.verb} resource "{call.resource}" '
        f'in API group "{call.group}" {where}'
    )


def rbac_refusal(w: Workload, cluster: ClusterObjects) -> str | None:
    """The first API call the workload's component declares for it that its ServiceAccount may not make."""
    component = component_of(w, cluster)
    needs = component.runtime_needs.api if component else ()
    calls = [c for c in needs if c.workload == w.template.name and c.at == START]
    if not calls:
        return None
    account = (w.template.namespace, pod_account(w.template.spec))
    for call in calls:
        namespace = w.template.namespace if call.own_namespace else None
        if not grants(cluster.rbac().rules_of(account, namespace), call):
            return (
                f"its controller's API calls are refused ({call.source}): {forbidden(account, call, namespace)}: "
                "its informers never sync and its pods are not Ready"
            )
    return None


# ---- network policy ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Destination:
    """Where a pod connects: pods of a namespace with labels, or an entity (kube-apiserver, world)
    with a host name; on a port and protocol."""

    what: str  # for the message
    port: int
    protocol: str = "TCP"
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    entities: frozenset[str] = frozenset()  # Cilium entities that select it
    host: str = ""  # its DNS name, for toFQDNs
    external: bool = False  # outside the cluster: a CIDR rule may cover it


API_SERVER = Destination(
    f"the API server (port {API_SERVER_PORT})",
    API_SERVER_PORT,
    entities=frozenset({"kube-apiserver", "remote-node", "cluster", "all"}),
)
DNS = Destination(
    "kube-dns (UDP 53)", 53, "UDP", KUBE_DNS[0], KUBE_DNS[1], entities=frozenset({"cluster", "all"})
)


def vault_destination(url_host: str, port: int) -> Destination:
    return Destination(
        f"the vault {url_host}:{port}",
        port,
        host=url_host,
        entities=frozenset({"world", "all"}),
        external=True,
    )


def _cilium_selects(selector: Mapping[str, Any], policy_ns: str, ns: str, labels: Mapping[str, str]) -> bool:
    """A CiliumNetworkPolicy's endpoint selector: its keys may carry a source prefix (`k8s:`); it stays
    in the policy's namespace unless it names the namespace label."""

    def bare(key: str) -> str:
        return key.split(":", 1)[1] if key.split(":", 1)[0] in ("k8s", "any") and ":" in key else key

    plain = {
        "matchLabels": {bare(k): v for k, v in (selector.get("matchLabels") or {}).items()},
        "matchExpressions": [{**e, "key": bare(e["key"])} for e in selector.get("matchExpressions") or []],
    }
    names_namespace = NAMESPACE_LABEL in plain["matchLabels"] or any(
        e["key"] == NAMESPACE_LABEL for e in plain["matchExpressions"]
    )
    if not names_namespace and ns != policy_ns:
        return False
    return label_selector_matches(plain, {**labels, NAMESPACE_LABEL: ns})


def _cilium_ports(rule: Mapping[str, Any], to: Destination) -> bool:
    ports = [p for r in rule.get("toPorts") or [] for p in r.get("ports") or []]
    return not ports or any(
        str(p.get("port")) == str(to.port) and p.get("protocol", "ANY") in ("ANY", to.protocol) for p in ports
    )


def _cilium_allows(rule: Mapping[str, Any], policy_ns: str, to: Destination) -> bool:
    if not _cilium_ports(rule, to):
        return False
    if to.entities & set(rule.get("toEntities") or []):
        return True
    if to.external and (rule.get("toCIDR") or rule.get("toCIDRSet")):
        return True
    fqdns = rule.get("toFQDNs") or []
    if to.host and any(
        f.get("matchName") == to.host or fnmatch.fnmatch(to.host, f.get("matchPattern", "")) for f in fqdns
    ):
        return True
    return bool(to.namespace) and any(
        _cilium_selects(s, policy_ns, to.namespace, to.labels) for s in rule.get("toEndpoints") or []
    )


def _k8s_allows(rule: Mapping[str, Any], cluster: ClusterObjects, to: Destination) -> bool:
    ports = rule.get("ports") or []
    if ports and not any(
        str(p.get("port")) == str(to.port) and p.get("protocol", "TCP") == to.protocol for p in ports
    ):
        return False
    peers = rule.get("to") or []
    if not peers:
        return True
    for peer in peers:
        if "ipBlock" in peer:
            if to.external:
                return True
            continue
        if not to.namespace:
            continue
        ns_selector = peer.get("namespaceSelector")
        in_ns = (
            label_selector_matches(ns_selector, cluster.namespace_labels(to.namespace))
            if ns_selector is not None
            else False
        )
        if in_ns and label_selector_matches(peer.get("podSelector"), to.labels):
            return True
    return False


def egress_refusal(w: Workload, cluster: ClusterObjects, to: Destination) -> str | None:
    """Why the namespace's policies keep the workload's pods from `to`, or None (no egress
    enforcement on them, or a rule lets them)."""
    t = w.template
    if t.host_network:
        return None
    enforced, names = False, []
    for _, applied in cluster.of_kind("NetworkPolicy"):
        body, spec = applied.body, applied.body.get("spec") or {}
        if body["metadata"].get("namespace") != t.namespace or not label_selector_matches(
            spec.get("podSelector"), t.labels
        ):
            continue
        if "Egress" not in (spec.get("policyTypes") or (["Egress"] if "egress" in spec else [])):
            continue
        enforced, names = True, [*names, f"NetworkPolicy {body['metadata']['name']}"]
        if any(_k8s_allows(rule, cluster, to) for rule in spec.get("egress") or []):
            return None
    for _, applied in cluster.of_kind("CiliumNetworkPolicy"):
        body, spec = applied.body, applied.body.get("spec") or {}
        ns = body["metadata"].get("namespace")
        if ns != t.namespace or "egress" not in spec:
            continue
        if not _cilium_selects(spec.get("endpointSelector") or {}, ns, t.namespace, t.labels):
            continue
        enforced, names = True, [*names, f"CiliumNetworkPolicy {body['metadata']['name']}"]
        if any(_cilium_allows(rule, ns, to) for rule in spec.get("egress") or []):
            return None
    if not enforced:
        return None
    return f"the network policies of namespace {t.namespace} ({', '.join(names)}) let no egress to {to.what}"


def api_egress_refusal(w: Workload, cluster: ClusterObjects) -> str | None:
    component = component_of(w, cluster)
    if component is None or not component.talks_to_api:
        return None
    blocked = egress_refusal(w, cluster, API_SERVER)
    if blocked is None:
        return None
    return (
        f"{blocked}: its clients time out on the API server (dial tcp <kubernetes Service>:443: i/o "
        "timeout), so it never becomes Ready"
    )


def vault_egress_refusal(w: Workload, cluster: ClusterObjects, vault: Destination) -> str | None:
    """Why a workload that reads the vault cannot reach it: no DNS for its name, or no way to it."""
    return egress_refusal(w, cluster, DNS) or egress_refusal(w, cluster, vault)


def vault_login_refusal(
    cluster: ClusterObjects, app: str | None, server: str, account: tuple[str, str]
) -> str | None:
    """Why the secret-store controller of `app` cannot log in to the vault at `server` as the store's
    `account`: its ServiceAccount may not create that account's token (a VAULT_LOGIN call), or its
    namespace's policies keep it from the vault's name or address."""
    return cluster.unchanged(  # type: ignore[no-any-return]
        ("vault login", app, server, account), lambda: _vault_login_refusal(cluster, app, server, account)
    )


def _vault_login_refusal(
    cluster: ClusterObjects, app: str | None, server: str, account: tuple[str, str]
) -> str | None:
    url = urlsplit(server)
    vault = vault_destination(url.hostname or server, url.port or (443 if url.scheme == "https" else 80))
    for w in cluster.owner_apps(app or ""):
        component = component_of(w, cluster)
        if component is None:
            continue
        mine = pod_account(w.template.spec)
        for call in component.runtime_needs.api:
            if call.workload != w.template.name or call.at != VAULT_LOGIN:
                continue
            named = replace(call, name=account[1])
            if not grants(cluster.rbac().rules_of((w.template.namespace, mine), account[0]), named):
                # external-secrets providers/v1/vault/auth.go errGetKubeSATokenRequest
                return (
                    f'cannot request Kubernetes service account token for service account "{account[1]}": '
                    f"{forbidden((w.template.namespace, mine), named, account[0])} ({call.source})"
                )
        if w.template.name in component.runtime_needs.vault:
            blocked = vault_egress_refusal(w, cluster, vault)
            if blocked:
                return f"{w.template.ref} cannot reach the vault: {blocked} (dial tcp: i/o timeout)"
    return None


# ---- host volume groups ------------------------------------------------------------------------
@lru_cache(maxsize=64)
def _groups_in(text: str, classes: str, group: str) -> tuple[str, ...]:
    config = yaml.safe_load(text) or {}
    return tuple(str(c[group]) for c in config.get(classes) or [] if isinstance(c, dict) and group in c)


def needed_groups(w: Workload, cluster: ClusterObjects, needs: HostVolumeGroups) -> tuple[str, ...]:
    """The volume groups the agent's mounted configuration names."""
    found: list[str] = []
    for volume in w.template.volumes():
        name = dig(volume, "configMap", "name")
        config = cluster.find("ConfigMap", w.template.namespace, name) if name else None
        text = ((config.body.get("data") or {}) if config else {}).get(needs.config_key)
        if text:
            found += _groups_in(str(text), needs.classes, needs.group)
    return tuple(found)


def volume_group_refusal(w: Workload, cluster: ClusterObjects) -> str | None:
    """A node agent whose configuration names a volume group that the runbook made on no host of a
    node the agent runs on exits there (CrashLoopBackOff): the DaemonSet is never ready."""
    component = component_of(w, cluster)
    needs = component.runtime_needs.volume_groups if component else None
    if needs is None or not w.template.name.startswith(needs.workload_prefix):
        return None
    groups = needed_groups(w, cluster, needs)
    for node in sorted(cluster.nodes.values(), key=lambda n: n.name):
        missing = [g for g in groups if g not in cluster.volume_groups.get(node.pool, set())]
        if missing and w.template.why_not(node) is None:
            return (
                f"{needs.refusal.format(group=missing[0])} on {node.name} ({needs.source}): no runbook "
                f"step creates it on the {node.pool} hosts (`vgcreate {missing[0]} <drives>`, as "
                f"local-cache-{node.pool}.sh does)"
            )
    return None


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (volume_group_refusal, rbac_refusal, api_egress_refusal)
