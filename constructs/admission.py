"""ValidatingAdmissionPolicies (built into Kubernetes, no controller): the rules the cluster itself must
refuse whoever applies them, each with its binding in Deny mode. Expressions stay within standard CEL
(no Kubernetes library functions), so they evaluate offline as the API server evaluates them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from constructs import Construct
from constructs.argocd import TRACKING_ANNOTATION
from constructs.objects import BASELINE_CAPABILITIES, CONFINING_PROFILES, POD_CONTAINER_LISTS, api_object

API = "admissionregistration.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
# Who is never judged: the API server's own bootstrap and kubeadm (system:masters), and the controller
# that fills aggregated ClusterRoles (the built-in admin and edit roles include impersonate).
EXEMPT = (
    "!('system:masters' in request.userInfo.groups) && "
    "request.userInfo.username != 'system:serviceaccount:kube-system:clusterrole-aggregation-controller'"
)


def _cel_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in sorted(values)) + "]"


class AdmissionPolicy(Construct):
    """One policy and its binding: `expression` must hold for every matched request."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        rules: list[dict],
        expression: str,
        message: str,
        namespace_labels: dict[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        constraints: dict = {"resourceRules": rules}
        if namespace_labels:
            constraints["namespaceSelector"] = {"matchLabels": dict(namespace_labels)}
        api_object(
            self,
            "Policy",
            API,
            "ValidatingAdmissionPolicy",
            {"name": name},
            spec={
                "failurePolicy": "Fail",
                "matchConstraints": constraints,
                "matchConditions": [{"name": "not-bootstrap", "expression": EXEMPT}],
                "validations": [{"expression": expression, "message": message}],
            },
        )
        api_object(
            self,
            "Binding",
            API,
            "ValidatingAdmissionPolicyBinding",
            {"name": name},
            spec={"policyName": name, "validationActions": ["Deny"]},
        )


# Where a tenant writes the labels Kueue reads a workload's priority from: the object's own, and the
# templates from which kube-system's controllers make the Jobs and pods (a CronJob's Job, a
# Deployment's or ReplicaSet's pods). Those controllers are let through, so the templates are judged.
PRIORITY_LABEL_PLACES = (
    ("metadata",),
    ("spec", "template", "metadata"),
    ("spec", "jobTemplate", "metadata"),
    ("spec", "jobTemplate", "spec", "template", "metadata"),
)
_CONTROLLERS = "request.userInfo.username.startsWith('system:serviceaccount:kube-system:')"


def _label_value(root: str, place: Sequence[str], label: str) -> str:
    """The label's value at `place` of `root`, '' where the place or the label is absent."""
    fields = [root, *place, "labels"]
    present = " && ".join(f"has({'.'.join(fields[: i + 1])})" for i in range(1, len(fields)))
    labels = ".".join(fields)
    return f"(({present} && '{label}' in {labels}) ? {labels}['{label}'] : '')"


def _each_place(label: str, accepted: Callable[[str, bool], str]) -> str:
    """At every place, a value `accepted` admits (told whether the place is the object's own), or an
    update that leaves it as it was (Kueue unsuspending a Job updates it)."""
    checks = []
    for place in PRIORITY_LABEL_PLACES:
        now = _label_value("object", place, label)
        unchanged = f"(request.operation == 'UPDATE' && {_label_value('oldObject', place, label)} == {now})"
        checks.append(f"({accepted(now, place == PRIORITY_LABEL_PLACES[0])} || {unchanged})")
    return " && ".join(checks)


def reserved_priorities_expression(label: str, reserved: Sequence[str], appliers: Sequence[str]) -> str:
    """A workload labelled with a reserved Kueue priority, on itself or in a template, comes from Git
    (the appliers) or from a kube-system controller making it from one that did."""
    return f"request.userInfo.username in {_cel_list(appliers)} || {_CONTROLLERS} || " + _each_place(
        label, lambda value, _: f"!({value} in {_cel_list(reserved)})"
    )


def tenant_priority_expression(
    label: str, allowed: Sequence[str], unlabelled: bool, appliers: Sequence[str]
) -> str:
    """A tenant's own workload carries one of its `allowed` priority classes (or none, where
    `unlabelled`), and a template of it one of those or none (the object's own label speaks for it);
    what Git holds (the appliers) and a kube-system controller's copy of a template pass."""
    own = [*allowed, ""] if unlabelled else list(allowed)
    return f"request.userInfo.username in {_cel_list(appliers)} || {_CONTROLLERS} || " + _each_place(
        label, lambda value, is_own: f"{value} in {_cel_list(own if is_own else [*allowed, ''])}"
    )


def _protected_unchanged(field: str, prefixes: Sequence[str]) -> str:
    """The metadata `field` (labels, annotations) keys with one of `prefixes` are as they were: none
    added, changed or removed (on a create, none set)."""
    new = f"(has(object.metadata.{field}) ? object.metadata.{field} : {{}})"
    old = f"(request.operation == 'UPDATE' && has(oldObject.metadata.{field}) ? oldObject.metadata.{field} : {{}})"
    protected = " || ".join(f"k.startsWith('{prefix}')" for prefix in sorted(prefixes))
    return (
        f"{new}.all(k, !({protected}) || (k in {old} && {old}[k] == {new}[k])) && "
        f"{old}.all(k, !({protected}) || k in {new})"
    )


def namespace_confinement_expression(
    labels: Sequence[str], annotations: Sequence[str], appliers: Sequence[str]
) -> str:
    """A namespace's labels and annotations that confine what runs in it (keys with these prefixes:
    Pod Security levels, Kueue management, a tenant's priority, its tolerations whitelist) are Git's:
    only the appliers set, change or remove them."""
    return (
        f"request.userInfo.username in {_cel_list(appliers)} || "
        f"({_protected_unchanged('labels', labels)}) && ({_protected_unchanged('annotations', annotations)})"
    )


# Built-in ClusterRoles as strong as cluster-admin: the aggregation controller's may escalate any
# ClusterRole, kube-controller-manager's may mint a token for any service account.
AS_STRONG_AS_CLUSTER_ADMIN = (
    "cluster-admin", "system:controller:clusterrole-aggregation-controller", "system:kube-controller-manager",
)  # fmt: skip
# Pod Security does not guard kube-system: admin or edit there makes privileged pods and reads its Secrets
UNGUARDED_NAMESPACE = "kube-system"


def cluster_admin_binding_expression(reviewed: Mapping[tuple[str, str, str], Sequence[str]]) -> str:
    """cluster-admin, or a built-in role as strong, is bound only by a reviewed binding (its kind,
    namespace and name), and only to the service accounts it binds as Git holds it (`<namespace>/<name>`):
    a binding of a reviewed name elsewhere, or to anyone else, is refused. admin and edit are never bound
    in kube-system."""
    subject = "s.kind == 'ServiceAccount' && has(s.namespace) && (s.namespace + '/' + s.name) in {}"
    allowed = [
        f"(object.kind == '{kind}' && object.metadata.name == '{name}' && "
        + (
            f"has(object.metadata.namespace) && object.metadata.namespace == '{namespace}' && "
            if namespace
            else ""
        )
        + f"object.subjects.all(s, {subject.format(_cel_list(accounts))}))"
        for (kind, namespace, name), accounts in sorted(reviewed.items())
    ]
    strong = (
        f"!(object.roleRef.name in {_cel_list(AS_STRONG_AS_CLUSTER_ADMIN)}) || "
        f"(has(object.subjects) && size(object.subjects) > 0 && ({' || '.join(allowed) or 'false'}))"
    )
    unguarded = (
        f"!(object.kind == 'RoleBinding' && object.metadata.namespace == '{UNGUARDED_NAMESPACE}' && "
        "object.roleRef.kind == 'ClusterRole' && object.roleRef.name in ['admin', 'edit'])"
    )
    return f"({strong}) && {unguarded}"


def rbac_escalation_expression(reviewed: Sequence[str]) -> str:
    """A role that may grant what its holder lacks: bind or escalate on roles, or impersonate (named, or
    `*` on the resources impersonation acts on); or a ClusterRole whose rules the aggregation controller
    gathers from whatever roles carry its labels, which no review of the role itself can see."""
    impersonation = " || ".join(f"x == '{x}'" for x in IMPERSONATED) + " || x.startsWith('userextras')"
    grants = (
        "r.verbs.exists(v, v == 'impersonate') || "
        "(r.verbs.exists(v, v == '*') && has(r.apiGroups) && "
        "r.apiGroups.exists(g, g == '' || g == '*' || g == 'authentication.k8s.io') && "
        f"has(r.resources) && r.resources.exists(x, {impersonation})) || "
        f"(has(r.apiGroups) && r.apiGroups.exists(g, g == '{RBAC_GROUP}' || g == '*') && "
        "r.verbs.exists(v, v == 'bind' || v == 'escalate' || v == '*'))"
    )
    return (
        f"object.metadata.name in {_cel_list(reviewed)} || "
        f"(!has(object.aggregationRule) && (!has(object.rules) || !object.rules.exists(r, {grants})))"
    )


# What `impersonate` acts on (the core group's users, groups and service accounts, authentication.k8s.io's
# uids and userextras/<key>), and `*` for all of them
IMPERSONATED = ("*", "users", "groups", "serviceaccounts", "uids")


def secret_readers_expression(reviewed_roles: Sequence[str], builtin_readers: Sequence[str]) -> str:
    """Reading every Secret of the cluster is a reviewed grant: a ClusterRole that may get, list or
    watch Secrets (or every resource) without naming them is one of the reviewed ones, and no
    ClusterRoleBinding hands out the built-in roles that read them (admin, edit) cluster-wide."""
    reads = (
        "(!has(r.resourceNames) || size(r.resourceNames) == 0) && "
        "has(r.apiGroups) && r.apiGroups.exists(g, g == '' || g == '*') && "
        "has(r.resources) && r.resources.exists(x, x == 'secrets' || x == '*') && "
        "r.verbs.exists(v, v == 'get' || v == 'list' || v == 'watch' || v == '*')"
    )
    return (
        f"object.kind == 'ClusterRoleBinding' ? !(object.roleRef.name in {_cel_list(builtin_readers)}) : "
        f"(object.metadata.name in {_cel_list(reviewed_roles)} || !has(object.rules) || !object.rules.exists(r, {reads}))"
    )


def node_cordon_only_expression(account: str, label: str) -> str:
    """What an account that may patch Nodes (the GPU node guard) may change on one: cordon it and set
    `label`, nothing else: no taint, no other label or annotation, no uncordon."""

    def same(field: str) -> str:
        return (
            f"(has(object.{field}) ? object.{field} : {{}}).filter(k, k != '{label}')"
            f".all(k, k in (has(oldObject.{field}) ? oldObject.{field} : {{}}) && "
            f"oldObject.{field}[k] == object.{field}[k]) && "
            f"(has(oldObject.{field}) ? oldObject.{field} : {{}}).filter(k, k != '{label}')"
            f".all(k, k in (has(object.{field}) ? object.{field} : {{}}))"
        )

    taints = "(has({0}.spec.taints) ? {0}.spec.taints : [])"
    return (
        f"request.userInfo.username != '{account}' || ("
        "has(object.spec.unschedulable) && object.spec.unschedulable && "
        f"{taints.format('object')} == {taints.format('oldObject')} && "
        f"{same('metadata.labels')} && "
        "(has(object.metadata.annotations) ? object.metadata.annotations : {}) == "
        "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}))"
    )


def certificate_names_expression(cluster_domain: str, public: dict[str, list[str]]) -> str:
    """A Certificate names only its own namespace's Services, or the public names that namespace serves
    (the Gateway's): anyone who may create one cannot mint another's name with the site's issuer."""
    own = (  # a bare name is a Service of the client's own namespace: it resolves nowhere else
        "!n.contains('.') || "
        "n.endsWith('.' + object.metadata.namespace + '.svc') || "
        f"n.endsWith('.' + object.metadata.namespace + '.svc.{cluster_domain}')"
    )
    served = " || ".join(
        f"(object.metadata.namespace == '{ns}' && n in {_cel_list(names)})"
        for ns, names in sorted(public.items())
    )
    allowed = f"{own} || {served}" if served else own
    return (
        f"(!has(object.spec.dnsNames) || object.spec.dnsNames.all(n, {allowed})) && "
        f"(!has(object.spec.commonName) || [object.spec.commonName].all(n, {allowed})) && "
        "!has(object.spec.ipAddresses) && !has(object.spec.uris) && !has(object.spec.emailAddresses) && "
        # a subject written out (CN=<any name>, which clients without SANs fall back to) and other SANs
        "!has(object.spec.literalSubject) && !has(object.spec.otherNames)"
    )


def certificate_requests_expression(makers: Sequence[str]) -> str:
    """A CertificateRequest carries its names inside a CSR that CEL cannot read: only cert-manager,
    making one for a Certificate the policy above admitted, may create it."""
    return f"request.userInfo.username in {_cel_list(makers)}"


def kube_system_workloads_expression(appliers: Sequence[str], apps: Sequence[str]) -> str:
    """kube-system is exempt from Pod Security: Argo CD puts workloads there only for the apps that ship
    them (its tracking annotation, which it writes over whatever the manifest says, names the app), so
    no other project's app can place a pod beyond Pod Security by naming that namespace."""
    annotations = "object.metadata.annotations"
    return (
        f"!(request.userInfo.username in {_cel_list(appliers)}) || "
        f"(has({annotations}) && '{TRACKING_ANNOTATION}' in {annotations} && "
        f"{_cel_list(apps)}.exists(a, {annotations}['{TRACKING_ANNOTATION}'].startsWith(a + ':')))"
    )


def host_access_expression(accounts: Sequence[str], namespaces: Sequence[str]) -> str:
    """A pod that reaches into its node (objects.py `reaches_host`: privileged, a hostPath volume, the
    host's network, PID or IPC namespace, a capability beyond the baseline's, no seccomp or AppArmor) runs as one of
    the reviewed accounts (`<namespace>/<service account>`, the node agents
    Git ships), or in a namespace whose operator makes its agents itself; the kubelet's mirror pods
    (static pods) are never judged."""
    spec = "object.spec"
    unconfined = (
        "("
        + " || ".join(  # the API server has copied an AppArmor annotation into the field
            f"(has({{0}}.{p}) && has({{0}}.{p}.type) && {{0}}.{p}.type == 'Unconfined')"
            for p in CONFINING_PROFILES
        )
        + ")"
    )
    context = "c.securityContext"
    reaching = (
        f"has({context}) && ("
        f"(has({context}.privileged) && {context}.privileged) || ({unconfined.format(context)}) || "
        f"(has({context}.capabilities) && has({context}.capabilities.add) && "
        f"{context}.capabilities.add.exists(a, !(a in {_cel_list(BASELINE_CAPABILITIES)}))))"
    )
    flags = " || ".join(f"(has({spec}.{f}) && {spec}.{f})" for f in ("hostNetwork", "hostPID", "hostIPC"))
    host = (
        f"{flags} || "
        f"(has({spec}.volumes) && {spec}.volumes.exists(v, has(v.hostPath))) || "
        f"(has({spec}.securityContext) && {unconfined.format(spec + '.securityContext')}) || "
        + " || ".join(
            f"(has({spec}.{key}) && {spec}.{key}.exists(c, {reaching}))" for key in POD_CONTAINER_LISTS
        )
    )
    account = (
        "object.metadata.namespace + '/' + "
        "(has(object.spec.serviceAccountName) ? object.spec.serviceAccountName : 'default')"
    )
    return (
        "request.userInfo.username.startsWith('system:node:') || "
        f"!({host}) || {account} in {_cel_list(accounts)} || object.metadata.namespace in {_cel_list(namespaces)}"
    )


NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"  # on a pod-bound token (Kubernetes 1.32+ GA)


def node_agent_expression(accounts: Sequence[str], protected_labels: Sequence[str], role_prefix: str) -> str:
    """What a node agent that may patch Nodes (its ClusterRole cannot say which) may change: only the
    Node its pod runs on (its token's node name), and there no taint, no `unschedulable`, no role or pool
    label: the marks the scheduler places platform components by."""
    extra = "request.userInfo.extra"
    labels = "(has({0}.metadata.labels) ? {0}.metadata.labels : {{}})"
    new, old = labels.format("object"), labels.format("oldObject")
    protected = f"k.startsWith('{role_prefix}') || k in {_cel_list(protected_labels)}"
    taints = "(has({0}.spec.taints) ? {0}.spec.taints : [])"
    unschedulable = "(has({0}.spec.unschedulable) && {0}.spec.unschedulable)"
    return (
        f"!(request.userInfo.username in {_cel_list(accounts)}) || ("
        f"has({extra}) && '{NODE_NAME_EXTRA}' in {extra} && "
        f"object.metadata.name in {extra}['{NODE_NAME_EXTRA}'] && "
        f"{taints.format('object')} == {taints.format('oldObject')} && "
        f"{unschedulable.format('object')} == {unschedulable.format('oldObject')} && "
        f"{new}.all(k, !({protected}) || (k in {old} && {old}[k] == {new}[k])) && "
        f"{old}.all(k, !({protected}) || k in {new}))"
    )


# Volume types a tenant pod may not use: in-tree network and host volumes (the kubelet mounts them from
# the node, outside Cilium and the namespace's quota) and inline CSI; what remains is Pod Security
# restricted's list without `csi`.
TENANT_DENIED_VOLUMES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume",
    "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "hostPath", "iscsi", "nfs",
    "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
)  # fmt: skip
DEVICE_ENV_PREFIX = "NVIDIA_"  # NVIDIA_VISIBLE_DEVICES and friends select devices past the device plugin


def tenant_pods_expression(reserved_accounts: Sequence[str]) -> str:
    """A tenant pod gets storage only through claims (or emptyDir, ephemeral, configMap, secret,
    projected, downwardAPI) mounted as file systems, and GPUs only by the device plugin's allocation: no
    volume of a denied type, no raw block device (`volumeDevices`: TopoLVM's thick volumes are not
    zeroed, lvcreate clears their first 4 KiB only, so a raw read returns what a former tenant wrote on
    that node; a file system reads unwritten blocks as zeros), no container of any kind with an NVIDIA_*
    variable; and it runs as none of `reserved_accounts` (the namespace's vault reader, whose token may
    have the API server review any token: External Secrets requests it, no pod needs it)."""
    volumes = "(has(object.spec.volumes) ? object.spec.volumes : [])"
    denied = " || ".join(f"has(v.{t})" for t in TENANT_DENIED_VOLUMES)
    containers = [
        f"(has(object.spec.{kind}) ? object.spec.{kind} : [])"
        for kind in ("containers", "initContainers", "ephemeralContainers")
    ]
    no_device_env = " && ".join(
        f"{c}.all(c, !has(c.env) || c.env.all(e, !e.name.startsWith('{DEVICE_ENV_PREFIX}')))"
        for c in containers
    )
    # ephemeral containers take no volumeDevices (the API refuses them)
    no_raw_device = " && ".join(f"{c}.all(c, !has(c.volumeDevices))" for c in containers[:2])
    # the ServiceAccount admission plugin has set the name (`default` if none) before policies run
    account = f"!has(object.spec.serviceAccountName) || !(object.spec.serviceAccountName in {_cel_list(reserved_accounts)})"
    return f"{volumes}.all(v, !({denied})) && {no_raw_device} && {no_device_env} && ({account})"


# A Secret the token controller fills with a long-lived token of the account it names: what a pod may
# not run as, it may not mount this way either.
LEGACY_TOKEN_TYPE = "kubernetes.io/service-account-token"


def tenant_secrets_expression() -> str:
    """A tenant namespace holds no legacy service-account token Secret (a pod gets a short-lived token
    of its own account projected; a long-lived one of another account is a way around the pod rules)."""
    return f"!has(object.type) || object.type != '{LEGACY_TOKEN_TYPE}'"


def persistent_volume_expression(appliers: Sequence[str], provisioners: Sequence[str]) -> str:
    """PersistentVolumes come from Git or from the CSI provisioners (and Velero's restores); a volume of
    the host or of a network server named inline (hostPath, local, nfs) from Git only."""
    host = "has(object.spec.hostPath) || has(object.spec.local) || has(object.spec.nfs)"
    return (
        f"request.userInfo.username in {_cel_list(appliers)} || "
        f"(request.userInfo.username in {_cel_list(provisioners)} && !({host}))"
    )
