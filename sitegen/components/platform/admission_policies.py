"""`admission-policies`: what the cluster itself refuses, whoever applies it (kubectl included), as
ValidatingAdmissionPolicies: a namespace's confining labels and annotations (Pod Security, Kueue, the
tolerations whitelist) set by Git only, reserved Kueue priorities only from Git, cluster-admin bound only where
reviewed, roles that may grant what their holder lacks (bind, escalate, impersonate) only where
reviewed, and pods that reach into their node (privileged, hostPath, host network or PID) only as the
node agents the cluster's apps ship (read from what they render) or in an operator's agent namespace. `validate` evaluates each policy's CEL against every object of dist/ (ADM-001), so a chart
that starts to need one of these shows up as a finding, not as a sync the API server refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs import Construct
from constructs import gpu_node_guard as node_guard
from constructs.admission import (
    AS_STRONG_AS_CLUSTER_ADMIN,
    RBAC_GROUP,
    AdmissionPolicy,
    certificate_names_expression,
    certificate_requests_expression,
    cluster_admin_binding_expression,
    host_access_expression,
    kube_system_workloads_expression,
    namespace_confinement_expression,
    node_agent_expression,
    node_cordon_only_expression,
    persistent_volume_expression,
    rbac_escalation_expression,
    reserved_priorities_expression,
    secret_readers_expression,
    tenant_pods_expression,
    tenant_priority_expression,
    tenant_secrets_expression,
)
from constructs.argocd import application_name
from constructs.cluster_manager import NAME as SPOKE_MANAGER
from constructs.edge import NAMESPACE_NAME_LABEL
from constructs.kueue import (
    MANAGED_NAMESPACE_LABEL,
    PRIORITIES,
    PRIORITY_LABEL,
    TENANT_CLASSES,
    TENANT_PRIORITY_LABEL,
)
from constructs.namespaces import PSA, TOLERATIONS_WHITELIST
from constructs.objects import WORKLOAD_KINDS, pod_account, reaches_host
from constructs.secrets import READER_SERVICE_ACCOUNT
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.gateway import Gateway, site_routes
from sitegen.components.platform import PROJECT
from sitegen.components.platform.argocd_manager import ArgocdManager
from sitegen.components.privilege import (
    AGGREGATES_ROLES,
    CHANGES_NODES,
    CREATES_VOLUMES,
    GRANTS_ANY_ROLE,
    READS_SECRETS,
)
from sitegen.model import ROLE_PREFIX
from sitegen.tree.fields import dig

# Built-in roles that read Secrets: bound cluster-wide, never (in a namespace, they are its admins').
BUILTIN_SECRET_READERS = ("admin", "edit")
SITE_LABELS = (
    MANAGED_NAMESPACE_LABEL.partition("/")[0] + "/"
)  # sitegen.io/: Kueue management, tenant priority
RESERVED_PRIORITIES = ("acceptance", "serving")  # the ones that preempt others' jobs
KUBE_SYSTEM = "kube-system"


def _queued_workloads() -> list[dict]:
    """The kinds Kueue queues, and every kind a kube-system controller makes its pods or Jobs from: what
    the priority policies judge (the controllers' copies pass, so what they copy must be judged)."""
    return [
        _rule("", "pods", "replicationcontrollers"),
        _rule("apps", "deployments", "statefulsets", "replicasets", "daemonsets"),
        _rule("batch", "jobs", "cronjobs"),
    ]


def cluster_admin_accounts(ctx: ClusterContext) -> dict[tuple[str, str, str], list[str]]:
    """By reviewed binding of a role as strong as cluster-admin the cluster's apps render (its kind,
    namespace and name; `Component.admin_bindings`), the service accounts it binds."""
    reviewed = {name for c in ctx.components for name in c.admin_bindings(ctx)}
    found: dict[tuple[str, str, str], list[str]] = {}
    for docs in ctx.rendered.values():
        for doc in docs:
            name = dig(doc, "metadata", "name")
            if (
                doc.get("kind") in ("ClusterRoleBinding", "RoleBinding")
                and name in reviewed
                and dig(doc, "roleRef", "name") in AS_STRONG_AS_CLUSTER_ADMIN
            ):
                key = (doc["kind"], dig(doc, "metadata", "namespace", default=""), name)
                found[key] = sorted(
                    f"{s['namespace']}/{s['name']}"
                    for s in doc.get("subjects") or []
                    if s.get("kind") == "ServiceAccount"
                )
    return found


def reviewed_roles(ctx: ClusterContext, *powers: str) -> set[str]:
    """The role names the cluster's components review as doing one of `powers` (`reviewed_roles`)."""
    return {
        name
        for component in ctx.components
        for name, review in component.reviewed_roles(ctx).items()
        if set(review.does) & set(powers)
    }


def _present(reviewed: set[str], ctx: ClusterContext, kinds: tuple[str, ...]) -> list[str]:
    """The reviewed role names this cluster's apps render: a reviewed name the cluster does not use is
    left out of its policy, so nothing there can take it (security review L5). A spoke's manager role
    is rendered after this app (it reads every app's kinds, this one's included): named as the cluster
    has that app."""
    rendered = {
        dig(doc, "metadata", "name")
        for docs in ctx.rendered.values()
        for doc in docs
        if doc.get("kind") in kinds
    }
    if any(c.name == ArgocdManager.name for c in ctx.components):
        rendered.add(SPOKE_MANAGER)
    return sorted(name for name in reviewed if name in rendered)


def _rule(group: str, *resources: str) -> dict:
    return {
        "apiGroups": [group],
        "apiVersions": ["*"],
        "resources": list(resources),
        "operations": ["CREATE", "UPDATE"],
    }


# Custom resources from which an operator makes node agents at run time (not in Git): the namespace of
# the app that renders one is trusted for host access as a whole.
OPERATOR_AGENT_KINDS = ("ClusterPolicy", "NicClusterPolicy")


def _pod_spec(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    spec = doc.get("spec") or {}
    if doc.get("kind") == "Pod":
        return spec
    if doc.get("kind") == "CronJob":
        spec = dig(spec, "jobTemplate", "spec") or {}
    return dig(spec, "template", "spec")


def host_access_accounts(rendered: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """`<namespace>/<service account>` of every workload the cluster's apps ship that reaches its node."""
    found = set()
    for docs in rendered.values():
        for doc in docs:
            if doc.get("kind") not in WORKLOAD_KINDS:
                continue
            pod = _pod_spec(doc)
            if pod is not None and reaches_host(pod):
                namespace = dig(doc, "metadata", "namespace", default="")
                found.add(f"{namespace}/{pod_account(pod)}")
    return sorted(found)


class AdmissionPolicies(RenderedComponent):
    name = "admission-policies"
    project = PROJECT
    layer = Layer.FOUNDATION
    talks_to_api = False
    reads_rendered = True  # the node agents every other app ships

    @staticmethod
    def applier(argocd_namespace: str, *, hub: bool) -> str:
        """Who applies dist/ to a cluster: the hub's application controller, or a spoke's manager (the
        policies let it through; validate and bringup create as it)."""
        if hub:
            return f"system:serviceaccount:{argocd_namespace}:argocd-application-controller"
        return f"system:serviceaccount:{ArgocdManager.namespace}:{SPOKE_MANAGER}"

    def _tenant_priorities(self, scope: Construct, ctx: ClusterContext) -> None:
        """Per tenant priority in use: the Kueue classes a tenant's own workloads may carry."""
        levels = sorted({p for c in ctx.components if (p := c.priority_ceiling(ctx)) is not None})
        for level in levels:
            allowed, unlabelled = TENANT_CLASSES[level]
            assert set(allowed) <= set(PRIORITIES) and not set(allowed) & set(RESERVED_PRIORITIES)
            shown = ", ".join(allowed) + (" or none" if unlabelled else "")
            AdmissionPolicy(
                scope,
                f"TenantPriority-{level}",
                name=f"sitegen-tenant-priority-{level}",
                rules=_queued_workloads(),
                namespace_labels={MANAGED_NAMESPACE_LABEL: "true", TENANT_PRIORITY_LABEL: level},
                expression=tenant_priority_expression(
                    PRIORITY_LABEL,
                    allowed,
                    unlabelled,
                    [self.applier(ctx.site.gitops.argocd.namespace, hub=ctx.is_hub)],
                ),
                message=f"a tenant whose priority is {level} (tenants.yaml) labels its workloads "
                f"{PRIORITY_LABEL}: {shown}",
            )

    def _namespace_confinement(self, scope: Construct, ctx: ClusterContext) -> None:
        """The other policies select namespaces by their labels, Pod Security reads their levels and
        PodTolerationRestriction their whitelist: whoever else may update a namespace (an operator, Argo
        CD's API server) could lift a tenant's confinement by relabelling it."""
        labels = (PSA, SITE_LABELS)
        annotations = (TOLERATIONS_WHITELIST.rpartition("/")[0] + "/",)
        AdmissionPolicy(
            scope,
            "NamespaceConfinement",
            name="sitegen-namespace-confinement",
            rules=[_rule("", "namespaces")],
            expression=namespace_confinement_expression(
                labels, annotations, [self.applier(ctx.site.gitops.argocd.namespace, hub=ctx.is_hub)]
            ),
            message=f"a namespace's {', '.join(sorted(labels))} labels and {', '.join(annotations)} "
            "annotations come from Git only",
        )

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        if ctx.has_gpus:
            assert set(RESERVED_PRIORITIES) <= set(PRIORITIES)
            AdmissionPolicy(
                scope,
                "ReservedPriorities",
                name="sitegen-reserved-priorities",
                rules=_queued_workloads(),
                namespace_labels={MANAGED_NAMESPACE_LABEL: "true"},
                expression=reserved_priorities_expression(
                    PRIORITY_LABEL,
                    RESERVED_PRIORITIES,
                    [self.applier(ctx.site.gitops.argocd.namespace, hub=ctx.is_hub)],
                ),
                message=f"the Kueue priorities {', '.join(RESERVED_PRIORITIES)} preempt other tenants' "
                "jobs: only what Git holds may carry them",
            )
            self._tenant_priorities(scope, ctx)
        self._namespace_confinement(scope, ctx)
        if ctx.has(CertManager):
            self._certificates(scope, ctx)
        AdmissionPolicy(
            scope,
            "ClusterAdminBindings",
            name="sitegen-cluster-admin-bindings",
            rules=[_rule(RBAC_GROUP, "rolebindings", "clusterrolebindings")],
            expression=cluster_admin_binding_expression(cluster_admin_accounts(ctx)),
            message="cluster-admin, or a built-in role as strong, is bound only by the reviewed bindings, "
            "to the accounts Git binds, and admin or edit never in kube-system "
            "(sitegen/components/platform/admission_policies.py)",
        )
        self._host_access(scope, ctx)
        self._kube_system_workloads(scope, ctx)
        self._guard_cordons_only(scope, ctx)
        self._node_agents_own_node(scope, ctx)
        self._persistent_volumes(scope, ctx)
        if ctx.has_gpus:
            self._tenant_workloads(scope)
        AdmissionPolicy(
            scope,
            "GrantingRoles",
            name="sitegen-granting-roles",
            rules=[_rule(RBAC_GROUP, "roles", "clusterroles")],
            expression=rbac_escalation_expression(
                _present(reviewed_roles(ctx, GRANTS_ANY_ROLE, AGGREGATES_ROLES), ctx, ("Role", "ClusterRole"))
            ),
            message="a role that may bind, escalate or impersonate, or that aggregates other roles' "
            "rules, is one of the reviewed ones (sitegen/components/platform/admission_policies.py)",
        )
        AdmissionPolicy(
            scope,
            "SecretReaders",
            name="sitegen-secret-readers",
            rules=[_rule(RBAC_GROUP, "clusterroles", "clusterrolebindings")],
            expression=secret_readers_expression(
                _present(reviewed_roles(ctx, READS_SECRETS), ctx, ("ClusterRole",)), BUILTIN_SECRET_READERS
            ),
            message="a ClusterRole that reads every Secret is one of the reviewed ones, and admin or "
            "edit is never bound cluster-wide (sitegen/components/platform/admission_policies.py)",
        )

    @staticmethod
    def _tenant_workloads(scope: Construct) -> None:
        """What a tenant's pods may use and run as, and the Secrets its namespace may hold."""
        AdmissionPolicy(
            scope,
            "TenantPods",
            name="sitegen-tenant-pods",
            rules=[
                {**_rule("", "pods"), "operations": ["CREATE"]},
                {**_rule("", "pods/ephemeralcontainers"), "operations": ["UPDATE"]},
            ],
            namespace_labels={MANAGED_NAMESPACE_LABEL: "true"},
            expression=tenant_pods_expression([READER_SERVICE_ACCOUNT]),
            message="a tenant pod mounts storage through claims only (no inline CSI, NFS or host "
            "volume), as file systems (no raw block device: a node's local volumes are not zeroed), "
            "gets GPUs only from the device plugin (no NVIDIA_* variable), and does not run as "
            f"{READER_SERVICE_ACCOUNT} (its token may review any token)",
        )
        AdmissionPolicy(
            scope,
            "TenantSecrets",
            name="sitegen-tenant-secrets",
            rules=[_rule("", "secrets")],
            namespace_labels={MANAGED_NAMESPACE_LABEL: "true"},
            expression=tenant_secrets_expression(),
            message="a tenant namespace holds no long-lived service-account token Secret: a pod's "
            "own token is projected",
        )

    @staticmethod
    def _host_access(scope: Construct, ctx: ClusterContext) -> None:
        operators = sorted(
            c.namespace for c in ctx.components
            if c.namespace and any(d.get("kind") in OPERATOR_AGENT_KINDS for d in ctx.rendered.get(c.name, []))
        )  # fmt: skip
        AdmissionPolicy(
            scope,
            "HostAccess",
            name="sitegen-host-access",
            rules=[
                {**_rule("", "pods"), "operations": ["CREATE"]},
                {**_rule("", "pods/ephemeralcontainers"), "operations": ["UPDATE"]},  # kubectl debug
            ],
            expression=host_access_expression(host_access_accounts(ctx.rendered), operators),
            message="a pod that reaches its node (privileged, hostPath, the host's network, PIDs or IPC, "
            "a capability beyond the baseline's, no seccomp or AppArmor) runs only as a node agent Git ships (its "
            "namespace and service account), or in an operator's agent namespace",
        )

    @staticmethod
    def _kube_system_workloads(scope: Construct, ctx: ClusterContext) -> None:
        apps = sorted(
            application_name(ctx.cluster.name, name)
            for name, docs in ctx.rendered.items()
            if any(d.get("kind") in WORKLOAD_KINDS and d["metadata"].get("namespace") == KUBE_SYSTEM for d in docs)
        )  # fmt: skip
        AdmissionPolicy(
            scope,
            "KubeSystemWorkloads",
            name="sitegen-kube-system-workloads",
            rules=[
                _rule("", "pods", "replicationcontrollers"),
                _rule("apps", "deployments", "statefulsets", "daemonsets", "replicasets"),
                _rule("batch", "jobs", "cronjobs"),
            ],
            namespace_labels={NAMESPACE_NAME_LABEL: KUBE_SYSTEM},
            expression=kube_system_workloads_expression(
                [AdmissionPolicies.applier(ctx.site.gitops.argocd.namespace, hub=ctx.is_hub)], apps
            ),
            message=f"Argo CD puts workloads into {KUBE_SYSTEM} (exempt from Pod Security) only for "
            f"{', '.join(apps) or 'no app'}",
        )

    @staticmethod
    def _guard_cordons_only(scope: Construct, ctx: ClusterContext) -> None:
        """The GPU node guard may patch Nodes (its ClusterRole cannot say which fields): the cluster
        lets it cordon and label, nothing more."""
        guards = sorted(
            f"system:serviceaccount:{d['metadata']['namespace']}:{pod_account(d['spec']['template']['spec'])}"
            for docs in ctx.rendered.values()
            for d in docs
            if d.get("kind") == "Deployment" and d["metadata"]["name"] == node_guard.NAME
        )  # fmt: skip
        for account in guards[:1]:  # one guard a cluster
            AdmissionPolicy(
                scope,
                "GuardCordonsOnly",
                name="sitegen-guard-cordons-only",
                rules=[{**_rule("", "nodes"), "operations": ["UPDATE"]}],
                expression=node_cordon_only_expression(account, node_guard.CORDON_LABEL),
                message="the GPU node guard cordons a Node and sets its label; it changes nothing else "
                "(no taint, no other label or annotation, no uncordon)",
            )

    @staticmethod
    def _node_agents_own_node(scope: Construct, ctx: ClusterContext) -> None:
        """The node agents reviewed to patch Nodes (Component.node_rbac) change only their own."""
        suffix = f": {CHANGES_NODES}"
        agents = sorted(
            "system:serviceaccount:" + key.removesuffix(suffix).replace("/", ":")
            for c in ctx.components
            for key in c.node_rbac(ctx)
            if key.endswith(suffix)
        )
        if not agents:
            return
        pool_labels = sorted(
            {k for p in ctx.cluster.pools for k in p.labels if not k.startswith(ROLE_PREFIX)}
        )
        AdmissionPolicy(
            scope,
            "NodeAgentsOwnNode",
            name="sitegen-node-agents-own-node",
            rules=[{**_rule("", "nodes"), "operations": ["UPDATE"]}],
            expression=node_agent_expression(agents, pool_labels, ROLE_PREFIX),
            message="a node agent changes only the Node it runs on, and never its taints, unschedulable, "
            "role or pool labels",
        )

    @staticmethod
    def _persistent_volumes(scope: Construct, ctx: ClusterContext) -> None:
        """PersistentVolumes from Git or the provisioners reviewed to create them (Component.powers),
        but the node agents among them (Component.node_rbac): a node plugin never provisions."""
        agents = {key.split(":", 1)[0] for c in ctx.components for key in c.node_rbac(ctx)}
        provisioners = sorted(
            "system:serviceaccount:" + account.replace("/", ":")
            for c in ctx.components
            for account, review in c.powers(ctx).items()
            if CREATES_VOLUMES in review.primitives and account not in agents
        )
        AdmissionPolicy(
            scope,
            "PersistentVolumes",
            name="sitegen-persistent-volumes",
            rules=[{**_rule("", "persistentvolumes"), "operations": ["CREATE"]}],
            expression=persistent_volume_expression(
                [AdmissionPolicies.applier(ctx.site.gitops.argocd.namespace, hub=ctx.is_hub)], provisioners
            ),
            message="PersistentVolumes come from Git or a CSI provisioner; hostPath, local and NFS "
            "volumes from Git only",
        )

    @staticmethod
    def _certificates(scope: Construct, ctx: ClusterContext) -> None:
        public: dict[str, list[str]] = {}
        if ctx.has(Gateway):
            public[ctx.get(Gateway).namespace] = sorted({r.hostname for r in site_routes(ctx)})
        AdmissionPolicy(
            scope,
            "CertificateNames",
            name="sitegen-certificate-names",
            rules=[_rule("cert-manager.io", "certificates")],
            expression=certificate_names_expression(ctx.cluster.spec.dns_domain, public),
            message="a Certificate names its own namespace's Services, or the public names its namespace "
            "serves (the Gateway's routes)",
        )
        makers = [f"system:serviceaccount:{ctx.get(CertManager).namespace}:{CertManager.name}"]
        AdmissionPolicy(
            scope,
            "CertificateRequests",
            name="sitegen-certificate-requests",
            rules=[{**_rule("cert-manager.io", "certificaterequests"), "operations": ["CREATE"]}],
            expression=certificate_requests_expression(makers),
            message="CertificateRequests come from cert-manager, for Certificates the site admits",
        )
