"""Admission: whether the API server would accept an object now. A webhook whose failurePolicy is Fail
refuses what its rules and its namespace and object selectors match while it cannot answer: its Service
has no running pod, or none serves the port it calls (refusals/wiring.py), or the CA cert-manager
injects into it is not issued. A namespace's ResourceQuotas refuse pods that leave out a request they
bound (in any container), or that ask more than is left beside the namespace's running pods, and
claims (a PersistentVolumeClaim, or a StatefulSet pod's claim templates) beyond `persistentvolumeclaims`
or `requests.storage`. `service_ready` also serves an APIService's health (argo.py).

ValidatingAdmissionPolicies in force (applied, with a Deny binding) judge every create by its CEL
(admission_policy.py): Argo CD's applies as the cluster's applier, pods as the kube-system controller
that makes them.

Not modelled: what a webhook that answers decides (it admits), operations other than CREATE, the other
admission plugins (LimitRange defaults; Pod Security is cluster.py's), per-StorageClass claim quotas, object counts
and limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.check.bringup.kube import PodTemplate, add, label_selector_matches, quantity, requests_of
from sitegen.check.bringup.objects import ClusterObjects, Workload, key_of
from sitegen.check.bringup.refusals.wiring import DEFAULT_PORT, declared, service_port, unserved
from sitegen.check.bringup.scheduling import usage
from sitegen.check.bringup.secrets import Secrets
from sitegen.check.netpol import End, PolicyView
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

WEBHOOK_CONFIGURATIONS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
ADMISSION_POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
NETWORK_POLICY_KINDS = ("NetworkPolicy", "CiliumNetworkPolicy")


class Admission:
    """What the API server admits: webhooks and their Services, ValidatingAdmissionPolicies, network
    policy views and quotas; a webhook's CA comes from `Secrets.certificate_ready`."""

    def __init__(self, cluster: ClusterObjects, secrets: Secrets) -> None:
        self.cluster = cluster
        self.secrets = secrets

    # ---- webhooks --------------------------------------------------------------------------------
    def service_ready(self, namespace: str, name: str, port: int) -> str | None:
        """None when the Service has a running backend that serves its `port` (refusals/wiring.py),
        else why not."""
        service = self.cluster.find("Service", namespace, name)
        if service is None:
            return f"Service {namespace}/{name} does not exist"
        backends = self._backends(service.body)
        if not backends:
            return f"no running pod behind Service {namespace}/{name}"
        why, assumed = unserved(service.body, port, backends)
        if assumed:
            self.cluster.assumed.add(assumed)
        return why

    def _backends(self, service: Mapping[str, Any]) -> list[PodTemplate]:
        """The running pod templates the Service's selector matches."""
        namespace = dig(service, "metadata", "namespace")
        selector = dig(service, "spec", "selector") or {}
        return [
            w.template
            for w in self.cluster.workloads.values()
            if w.template.namespace == namespace
            and w.running
            and selector
            and all(w.template.labels.get(k) == str(v) for k, v in selector.items())
        ]

    def admission_blocker(
        self, body: Mapping[str, Any], resource: str | None = None, user: str | None = None
    ) -> str | None:
        """Why the API server would refuse `user` (default: the cluster's Argo CD) creating this object
        now: a ValidatingAdmissionPolicy in force that refuses it, or a webhook that cannot answer."""
        refused = self.policy_refusal(body, user or self.cluster.applier)
        if refused:
            return refused
        group, kind, ns, _ = key_of(body)
        resource = resource or self.cluster.resource_name(group, kind)
        if kind == "PersistentVolumeClaim" and group == "":
            refused = self.claim_quota_blocker(ns, [_claim_size(body)])
            if refused:
                return refused
        labels = dig(body, "metadata", "labels") or {}
        ns_labels = self.cluster.namespace_labels(ns) if ns else {}
        for wkind, wname, config, hook in self._failing_webhooks(group, resource):
            if ns and not label_selector_matches(hook.get("namespaceSelector"), ns_labels):
                continue
            if not label_selector_matches(hook.get("objectSelector"), labels):
                continue
            why = self.webhook_down(config, hook)
            if why:
                return f"{wkind} {wname} ({hook['name']}) cannot answer: {why}"
        return None

    def _failing_webhooks(self, group: str, resource: str) -> list[tuple[str, str, Mapping[str, Any], Any]]:
        """The webhooks whose rules take the resource and whose failure refuses the request (kind and
        name of their configuration, its body, the webhook), by configuration."""

        def found() -> list[tuple[str, str, Mapping[str, Any], Any]]:
            return [
                (wkind, wname, applied.body, hook)
                for (_, wkind, _, wname), applied in sorted(self.cluster.of_kind(*WEBHOOK_CONFIGURATIONS))
                for hook in applied.body.get("webhooks") or []
                if hook.get("failurePolicy", "Fail") == "Fail"
                and _rule_matches(hook.get("rules") or [], group, resource)
            ]

        return self.cluster.unchanged_kinds(WEBHOOK_CONFIGURATIONS, ("webhooks", group, resource), found)  # type: ignore[no-any-return]

    def policy_refusal(
        self, body: Mapping[str, Any], user: str, old: Mapping[str, Any] | None = None
    ) -> str | None:
        """The first refusal of the ValidatingAdmissionPolicies applied so far (with a Deny binding), of
        creating the object, or of updating `old` to it."""
        policies: list[Policy] = self.cluster.unchanged_kinds(
            ADMISSION_POLICY_KINDS,
            ("denying policies",),
            lambda: denying_policies(a.body for _, a in self.cluster.of_kind(*ADMISSION_POLICY_KINDS)),
        )
        if not policies:
            return None
        ns = dig(body, "metadata", "namespace")
        labels = self.cluster.namespace_labels(ns) if ns else None
        operation = "CREATE" if old is None else "UPDATE"
        for policy in policies:
            if policy.matches(body, labels, operation):
                refused = policy.refusal(body, Request(user, operation=operation), old)
                if refused:
                    return refused
        return None

    def webhook_down(self, config: Mapping[str, Any], hook: Mapping[str, Any]) -> str | None:
        service = dig(hook, "clientConfig", "service")
        if service:
            port = int(service.get("port", DEFAULT_PORT))
            down = self.service_ready(service["namespace"], service["name"], port) or self.api_server_denied(
                service
            )
            if down:
                return down
        inject = dig(config, "metadata", "annotations", "cert-manager.io/inject-ca-from")
        if inject:
            ns, _, name = inject.partition("/")
            if not self.secrets.certificate_ready(ns, name):
                return f"its CA comes from Certificate {inject}, which is not issued"
        return None

    def policy_view(self) -> PolicyView:
        """The network policies applied so far."""
        return self.cluster.unchanged_kinds(  # type: ignore[no-any-return]
            NETWORK_POLICY_KINDS,
            ("policy view",),
            lambda: PolicyView(
                Document(PurePosixPath("live"), i, dict(a.body))
                for i, (_, a) in enumerate(self.cluster.of_kind(*NETWORK_POLICY_KINDS))
            ),
        )

    def enforces_policies(self) -> bool:
        config = self.cluster.find("ConfigMap", "kube-system", "cilium-config")
        return (
            config is not None
            and str(dig(config.body, "data", "policy-audit-mode", default="false")) != "true"
        )

    def api_server_denied(self, service: Mapping[str, Any]) -> str | None:
        """With Cilium enforcing, the backend's namespace must let the API server in on the pod port
        the Service's port targets (a named one: the port of that name its running pods declare)."""
        if not self.enforces_policies():
            return None
        namespace = service["namespace"]
        found = self.cluster.find("Service", namespace, service["name"])
        entry = service_port(found.body, int(service.get("port", DEFAULT_PORT))) if found else None
        if found is None or entry is None:
            return None  # service_ready says why
        target = entry.get("targetPort", entry["port"])
        if isinstance(target, int) or str(target).isdigit():
            ports = [int(target)]
        else:
            protocol = str(entry.get("protocol", "TCP"))
            ports = sorted(
                {n for name, n in declared(self._backends(found.body), protocol) if name == target}
            )
        view = self.policy_view()
        source, dest = End(entity="kube-apiserver"), End(namespace=namespace)
        if not ports or any(view.allows(source, dest, port) for port in ports):
            return None  # no pod port of that name: service_ready says why
        return (
            f"the network policy of namespace {namespace} lets the API server in on no port "
            f"{', '.join(map(str, ports))} (Cilium enforces)"
        )

    # ---- quotas ----------------------------------------------------------------------------------
    def quota_blocker(self, w: Workload) -> str | None:
        """The namespace's ResourceQuotas refuse the pods still to create: a request they bound that a
        container leaves out, or more than is left beside the namespace's running pods."""
        t = w.template
        quotas = [
            a.body
            for (_, k, ns, _), a in self.cluster.objects.items()
            if k == "ResourceQuota" and ns == t.namespace
        ]
        if not quotas:
            return None
        pods = (1 if t.daemon else max(t.replicas, 1)) - sum(w.placed.values())
        used: dict[str, int] = {}
        for other in self.cluster.workloads.values():
            if other is not w and other.template.namespace == t.namespace and other.running:
                running = sum(other.placed.values())
                add(used, {**{k: v * running for k, v in other.template.requests.items()}, "pods": running})
        if t.kind == "StatefulSet" and pods > 0:  # each new pod's claims, made from the templates
            templates = dig(self.cluster.objects_body(w), "spec", "volumeClaimTemplates") or []
            refused = self.claim_quota_blocker(t.namespace, [_claim_size(c) for c in templates] * pods)
            if refused:
                return refused
        need = {**{k: v * pods for k, v in t.requests.items()}, "pods": pods}
        for quota in quotas:
            name = quota["metadata"]["name"]
            for key, limit in sorted((dig(quota, "spec", "hard") or {}).items()):
                resource = _pod_quota_resource(key)
                if resource is None:
                    continue
                if resource in ("cpu", "memory"):
                    bare = [
                        c.get("name")
                        for c in t.containers()
                        if resource not in requests_of(c.get("resources"))
                    ]
                    if bare:
                        return f"ResourceQuota {name} bounds {resource}: container {bare[0]} requests none"
                hard = quantity(limit, milli=resource == "cpu")
                if used.get(resource, 0) + need.get(resource, 0) > hard:
                    short = usage(used, {resource: need.get(resource, 0)}, {resource: hard})
                    return f"ResourceQuota {name}: {short}"
        return None

    def claim_quota_blocker(self, namespace: str, new: list[int]) -> str | None:
        """The namespace's ResourceQuotas on claims (`persistentvolumeclaims`, `requests.storage`)
        against its claims so far (PersistentVolumeClaims applied, and one per claim template of each
        StatefulSet pod placed) and `new` (each new claim's storage request)."""
        quotas = [
            a.body
            for (_, k, ns, _), a in self.cluster.objects.items()
            if k == "ResourceQuota" and ns == namespace
        ]
        if not quotas or not new:
            return None
        sizes = [
            _claim_size(a.body)
            for (g, k, ns, _), a in self.cluster.objects.items()
            if g == "" and k == "PersistentVolumeClaim" and ns == namespace
        ]
        for w in self.cluster.workloads.values():
            if w.template.kind == "StatefulSet" and w.template.namespace == namespace and w.placed:
                templates = dig(self.cluster.objects_body(w), "spec", "volumeClaimTemplates") or []
                sizes += [_claim_size(c) for c in templates] * sum(w.placed.values())
        used = {"persistentvolumeclaims": len(sizes), "requests.storage": sum(sizes)}
        need = {"persistentvolumeclaims": len(new), "requests.storage": sum(new)}
        for quota in quotas:
            hard = dig(quota, "spec", "hard") or {}
            for key in ("persistentvolumeclaims", "requests.storage"):
                if key in hard and used[key] + need[key] > quantity(hard[key]):
                    return (
                        f"ResourceQuota {quota['metadata']['name']}: {key} {used[key]} used + {need[key]} asked "
                        f"> {hard[key]}"
                    )
        return None


def _claim_size(claim: Mapping[str, Any]) -> int:
    requests = dig(claim, "spec", "resources", "requests") or {}
    return quantity(requests.get("storage", "0"))


def _rule_matches(rules: Iterable[Mapping[str, Any]], group: str, resource: str) -> bool:
    for rule in rules:
        if "CREATE" not in (rule.get("operations") or []) and "*" not in (rule.get("operations") or []):
            continue
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        # `*` is every resource, `*/*` every resource and subresource; `pods/*` only pods' subresources
        if ("*" in groups or group in groups) and any(r in ("*", "*/*", resource) for r in resources):
            return True
    return False


def _pod_quota_resource(key: str) -> str | None:
    """The pod resource a ResourceQuota key bounds; None for claims, object counts and limits."""
    if key in ("pods", "cpu", "memory"):
        return key
    if key.startswith("requests.") and not key.endswith(".storage"):
        return key.removeprefix("requests.")
    return None
