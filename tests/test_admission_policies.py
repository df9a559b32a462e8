"""The ValidatingAdmissionPolicies the site ships, evaluated offline from their rendered CEL (cel-python)
against objects they must admit and objects they must refuse, and ADM-001: nothing in dist/ is refused."""

from __future__ import annotations

import pytest

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST, add, invoke_sitegen, validate

pytestmark = pytest.mark.tree_variants("one-cluster")  # what these tests break is in one-cluster


ARGO = Request("system:serviceaccount:argocd:argocd-application-controller")
TENANT = Request("oidc:alice", ("ai-research-users", "system:authenticated"))
KUEUE = Request("system:serviceaccount:kueue-system:kueue-controller-manager", operation="UPDATE")
JOB_CONTROLLER = Request("system:serviceaccount:kube-system:job-controller")
KUBEADM = Request("kubernetes-super-admin", ("system:masters",))


@pytest.fixture(scope="module")
def policies() -> dict[str, Policy]:
    docs = [d.body for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"]
    return {p.name: p for p in denying_policies(docs)}


def job(priority: str | None) -> dict:
    labels = {"kueue.x-k8s.io/priority-class": priority} if priority else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ai-research", "labels": labels},
    }


def binding(name: str, role: str) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": "mallory"}],
    }


def role(name: str, *rules: dict) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": list(rules),
    }


MANAGED = {"sitegen.io/kueue-managed": "true"}


def test_a_tenant_may_not_take_a_priority_that_preempts_others(policies):
    reserved = policies["sitegen-reserved-priorities"]
    assert reserved.matches(job("acceptance"), MANAGED, "CREATE")
    assert not reserved.matches(job("acceptance"), {}, "CREATE")  # only Kueue's namespaces
    refused = reserved.refusal(job("acceptance"), TENANT)
    assert refused and "preempt other tenants' jobs" in refused
    assert reserved.refusal(job("serving"), TENANT)
    assert reserved.refusal(job("health"), TENANT) is None  # the lowest priority takes nothing
    assert reserved.refusal(job(None), TENANT) is None
    assert reserved.refusal(job("acceptance"), ARGO) is None  # from Git
    assert reserved.refusal(job("acceptance"), KUEUE, old=job("acceptance")) is None  # unsuspending it
    assert reserved.refusal(job("acceptance"), Request("oidc:alice", operation="UPDATE"), old=job(None))
    pod = {**job("acceptance"), "apiVersion": "v1", "kind": "Pod"}
    assert reserved.refusal(pod, JOB_CONTROLLER) is None  # a Job's pods carry its labels


def _templated(api_version: str, kind: str, priority: str, *place: str) -> dict:
    """A tenant's object whose only priority label is in the template at `place`."""
    obj: dict = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ai-research"},
    }
    at = obj
    for field in place:
        at = at.setdefault(field, {})
    at["labels"] = {"kueue.x-k8s.io/priority-class": priority}
    return obj


# What a kube-system controller copies into the pods or Jobs it makes: let through at the copy, so
# judged where the tenant writes it.
TEMPLATES = [
    ("apps/v1", "Deployment", "spec", "template", "metadata"),
    ("apps/v1", "ReplicaSet", "spec", "template", "metadata"),
    ("apps/v1", "StatefulSet", "spec", "template", "metadata"),
    ("apps/v1", "DaemonSet", "spec", "template", "metadata"),
    ("v1", "ReplicationController", "spec", "template", "metadata"),
    ("batch/v1", "Job", "spec", "template", "metadata"),
    ("batch/v1", "CronJob", "spec", "jobTemplate", "metadata"),
    ("batch/v1", "CronJob", "spec", "jobTemplate", "spec", "template", "metadata"),
]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: f"{t[1]}.{'.'.join(t[2:-1])}")
def test_a_reserved_priority_in_a_template_is_refused_too(policies, template):
    """The controllers that copy a template run in kube-system and pass: a tenant's ReplicaSet or
    CronJob with `serving` in its template would otherwise make preempting pods or Jobs."""
    reserved = policies["sitegen-reserved-priorities"]
    api_version, kind, *place = template
    tenants = _templated(api_version, kind, "serving", *place)
    assert reserved.matches(tenants, MANAGED, "CREATE"), kind
    refused = reserved.refusal(tenants, TENANT)
    assert refused and "preempt other tenants' jobs" in refused
    assert reserved.refusal(_templated(api_version, kind, "health", *place), TENANT) is None
    assert reserved.refusal(tenants, ARGO) is None  # from Git
    update = Request("oidc:alice", operation="UPDATE")
    assert reserved.refusal(tenants, update, old=tenants) is None  # left as it was
    assert reserved.refusal(tenants, update, old=_templated(api_version, kind, "health", *place))


def test_cluster_admin_is_bound_only_where_reviewed(policies):
    bindings = policies["sitegen-cluster-admin-bindings"]
    assert bindings.matches(binding("x", "cluster-admin"), None, "CREATE")
    refused = bindings.refusal(binding("mallory-admin", "cluster-admin"), ARGO)
    assert refused and "is bound only by the reviewed bindings" in refused
    refused = bindings.refusal(
        binding("velero-server", "cluster-admin"), ARGO
    )  # the reviewed name, to mallory
    assert refused and "to the accounts Git binds" in refused
    velero = {**binding("velero-server", "cluster-admin"), "subjects": [
        {"kind": "ServiceAccount", "name": "velero-server", "namespace": "velero"}]}  # fmt: skip
    assert bindings.refusal(velero, ARGO) is None  # as Git holds it
    assert bindings.refusal(
        {**velero, "subjects": [*velero["subjects"], binding("x", "y")["subjects"][0]]}, ARGO
    )
    assert bindings.refusal(binding("mallory-view", "view"), ARGO) is None
    assert bindings.refusal(binding("kubeadm:cluster-admins", "cluster-admin"), KUBEADM) is None


def test_a_role_that_may_grant_is_a_reviewed_one(policies):
    granting = policies["sitegen-granting-roles"]
    rbac = "rbac.authorization.k8s.io"
    for rules in (
        {"apiGroups": [rbac], "resources": ["clusterroles"], "verbs": ["bind"]},
        {"apiGroups": [rbac], "resources": ["roles"], "verbs": ["escalate"]},
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
    ):
        refused = granting.refusal(role("sneaky", rules), ARGO)
        assert refused and "bind, escalate or impersonate" in refused, rules
    everything_in_apps = {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]}
    assert granting.refusal(role("apps-admin", everything_in_apps), ARGO) is None
    urls = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    assert granting.refusal(role("metrics", urls), ARGO) is None  # a rule without apiGroups
    assert granting.refusal({**role("empty"), "rules": None}, ARGO) is None  # null: absent to the API
    assert (
        granting.refusal(
            role("velero-server", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}), ARGO
        )
        is None
    )
    builtin = Request(
        "system:serviceaccount:kube-system:clusterrole-aggregation-controller", operation="UPDATE"
    )
    impersonating = {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}
    assert granting.refusal(role("edit", impersonating), builtin) is None  # the built-in edit role


def test_what_the_cluster_would_refuse_never_reaches_git(tree):
    rel = add(
        tree,
        "one-cluster/apps/ai/kueue/clusterrole.sneaky.yaml",
        role(
            "sneaky",
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"],
                "verbs": ["escalate"],
            },
        ),
    )
    result = validate(tree)
    assert result.exit_code == 1
    assert (
        f"{rel} [doc 0] ClusterRole sneaky: ADM-001 admission-policies: $: the API server refuses it: "
        "ValidatingAdmissionPolicy sitegen-granting-roles:"
    ) in result.stdout


def test_an_expression_the_offline_cel_cannot_read_is_a_refusal_not_a_pass():
    broken = Policy(
        "broken",
        {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"apiGroups": ["*"], "resources": ["*"], "operations": ["*"]}]
            },
            "validations": [{"expression": "quantity(object.spec.x).isGreaterThan(quantity('1'))"}],
        },
    )
    refused = broken.refusal(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "spec": {"x": "2"}}, ARGO
    )
    assert refused and "expression error" in refused


def test_bringup_applies_the_policies_as_the_api_server_does(tree):
    """Once ai-admission-policies is in (wave 0), Argo CD's apply of a role the policy refuses fails,
    and the app that ships it stays out of sync, named with the policy's message (its project names the
    role: the project is not what refuses it)."""
    import yaml

    project = tree / "one-cluster/bootstrap/argocd.appproject.gpu.yaml"
    body = yaml.safe_load(project.read_text())
    body["spec"]["clusterResourceWhitelist"].append(
        {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sneaky"}
    )
    project.write_text(yaml.safe_dump(body))
    add(
        tree,
        "one-cluster/apps/ai/kueue/clusterrole.sneaky.yaml",
        role(
            "sneaky", {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["bind"]}
        ),
    )
    result = invoke_sitegen("bringup", "--dist", tree, "--variant", "one-cluster")
    assert result.exit_code == 1
    assert "ClusterRole sneaky" in result.output
    assert (
        "ValidatingAdmissionPolicy sitegen-granting-roles: a role that may bind, escalate or impersonate"
        in result.output
    )


def certificate(namespace: str, *names: str, **spec) -> dict:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "c", "namespace": namespace},
        "spec": {"dnsNames": list(names), "issuerRef": {"kind": "ClusterIssuer", "name": "site"}, **spec},
    }


def test_a_certificate_names_only_its_namespace_or_what_it_serves(policies, site):
    names = policies["sitegen-certificate-names"]
    assert names.refusal(certificate("ai-research", "model.ai-research.svc", "model"), TENANT) is None
    local = f"model.ai-research.svc.{site.clusters['ai'].dns_domain}"
    assert names.refusal(certificate("ai-research", local), TENANT) is None
    for stolen in (
        certificate("ai-research", "argocd-server.argocd.svc"),  # another namespace's Service
        certificate("ai-research", site.gitops.argocd.hostname),  # a public name the Gateway serves
        certificate("ai-research", "model", ipAddresses=["10.20.3.10"]),
        certificate("ai-research", "model", commonName="harbor.hpc.example.internal"),
        certificate("ai-research", literalSubject="CN=vault.hpc.example.internal"),  # no SAN: CN counts
        certificate(
            "ai-research", "model", otherNames=[{"oid": "1.3.6.1.4.1.311.20.2.3", "utf8Value": "a@b"}]
        ),
    ):
        refused = names.refusal(stolen, TENANT)
        assert refused and "names its own namespace's Services" in refused, stolen
    gateway = certificate(
        "envoy-gateway-system", site.gitops.argocd.hostname, site.services.registry.hostname
    )
    assert names.refusal(gateway, ARGO) is None  # the Gateway's own certificate


def test_only_cert_manager_makes_certificate_requests(policies):
    requests = policies["sitegen-certificate-requests"]
    request = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "CertificateRequest",
        "metadata": {"name": "r", "namespace": "ai-research"},
    }
    assert requests.refusal(request, TENANT)
    assert requests.refusal(request, Request("system:serviceaccount:cert-manager:cert-manager")) is None


def pod(namespace: str, account: str | None = None, **spec) -> dict:
    from sitegen.check.admission_policy import admitted_pod

    body = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if account:
        body["serviceAccountName"] = account
    return admitted_pod(namespace, "p", {}, body)


HOST_PATH = {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}
PRIVILEGED = {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]}
DAEMONS = Request("system:serviceaccount:kube-system:daemon-set-controller")


def _with(**security) -> dict:
    return {"name": "c", "image": "busybox", "securityContext": security}


@pytest.mark.parametrize(
    ("body", "admitted"),
    [
        (pod("ai-research", **PRIVILEGED), False),  # a tenant's privileged pod
        (pod("ai-research", **HOST_PATH), False),  # a tenant's pod on the host's root
        (
            pod("kube-system", "debug", hostNetwork=True),
            False,
        ),  # an unknown account in a privileged namespace
        (pod("kube-system", "cilium", hostNetwork=True, **PRIVILEGED), True),  # the CNI's agent
        (pod("topolvm-node", "topolvm-node", **HOST_PATH), True),  # a node agent Git ships
        (pod("gpu-operator", "nvidia-driver", **PRIVILEGED), True),  # what the GPU Operator makes
        (pod("ai-research"), True),  # no host access: not judged
        # what else the Pod Security baseline forbids, in a namespace it does not guard (kube-system)
        (pod("kube-system", "debug", hostIPC=True), False),
        (pod("kube-system", "debug", containers=[_with(capabilities={"add": ["SYS_ADMIN"]})]), False),
        (pod("kube-system", "debug", containers=[_with(seccompProfile={"type": "Unconfined"})]), False),
        (pod("kube-system", "debug", securityContext={"seccompProfile": {"type": "Unconfined"}}), False),
        (pod("kube-system", "debug", ephemeralContainers=[_with(privileged=True)]), False),
        (pod("kube-system", "debug", containers=[_with(capabilities={"add": ["NET_BIND_SERVICE"]})]), True),
    ],
)
def test_host_access_only_for_the_node_agents_git_ships(policies, body, admitted):
    host = policies["sitegen-host-access"]
    assert host.matches(body, {}, "CREATE")
    refused = host.refusal(body, DAEMONS)
    assert (refused is None) == admitted, refused


def test_the_kubelets_mirror_pods_are_not_judged(policies):
    static = pod("kube-system", None, hostNetwork=True, **PRIVILEGED)
    assert policies["sitegen-host-access"].refusal(static, Request("system:node:cp01")) is None


def test_a_new_privileged_workload_in_git_is_refused_by_validate(tree):
    daemon = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "debug", "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"serviceAccountName": "debug", **HOST_PATH, "containers": PRIVILEGED["containers"]},
        }},
    }  # fmt: skip
    rel = add(tree, "one-cluster/apps/ai/broken/debug.yaml", daemon)
    result = validate(tree)
    found = [ln for ln in result.stdout.splitlines() if ln.startswith(rel) and "ADM-001" in ln]
    assert any(
        "the API server refuses its pods: ValidatingAdmissionPolicy sitegen-host-access" in ln for ln in found
    )


def deployment(namespace: str, app: str | None) -> dict:
    """A Deployment as Argo CD applies it for `app` (its tracking annotation), or untracked (None)."""
    from constructs.argocd import tracked

    body = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }  # fmt: skip
    return tracked(body, app) if app else body


@pytest.mark.parametrize(
    ("body", "request_", "admitted"),
    [
        (deployment("kube-system", "ai-cilium"), ARGO, True),
        (deployment("kube-system", "ai-coredns"), ARGO, True),
        (deployment("kube-system", "ai-gpu-health"), ARGO, False),  # another project's app
        (deployment("kube-system", None), ARGO, False),
        (deployment("kube-system", "ai-cilium-x"), ARGO, False),  # a prefix is not the app
        (
            deployment("kube-system", None),
            Request("system:serviceaccount:kube-system:replicaset-controller"),
            True,
        ),
    ],
)
def test_kube_system_takes_workloads_only_from_the_apps_that_ship_them(policies, body, request_, admitted):
    policy = policies["sitegen-kube-system-workloads"]
    assert policy.matches(body, {}, "CREATE")
    assert not policy.matches(deployment("gpu-health", "ai-gpu-health"), {}, "CREATE")  # only kube-system
    assert (policy.refusal(body, request_) is None) is admitted


def test_an_app_that_moves_its_workload_into_kube_system_is_refused_by_the_cluster(site, inputs):
    """The gpu project may deploy into kube-system (an app of it renders objects there), but its GPU
    node guard moved there would escape Pod Security: the API server refuses Argo CD's apply."""
    from .bringup_cases import ONE, blocked, edited, run

    def moved(doc):
        doc["metadata"]["namespace"] = "kube-system"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/gpu-node-guard/gpu-node-guard.deployment", moved)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-gpu-node-guard",
        "ValidatingAdmissionPolicy sitegen-kube-system-workloads: Argo CD puts workloads into kube-system",
    )


SECRETS_LIST = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}


@pytest.mark.parametrize(
    ("body", "admitted"),
    [
        (role("sneaky", SECRETS_LIST), False),
        (role("sneaky", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["list"]}), False),
        (role("sneaky", {**SECRETS_LIST, "resourceNames": ["its-own"]}), True),  # named Secrets only
        (role("sneaky", {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}), True),
        (role("external-secrets-controller", SECRETS_LIST), True),  # reviewed
        (binding("edit-everywhere", "edit"), False),  # the built-in edit reads every Secret
        (binding("viewers", "view"), True),
    ],
)
def test_reading_every_secret_is_a_reviewed_grant(policies, body, admitted):
    policy = policies["sitegen-secret-readers"]
    assert policy.matches(body, None, "CREATE")
    assert (policy.refusal(body, ARGO) is None) is admitted


def test_a_new_reader_of_every_secret_in_git_is_refused_by_validate(tree):
    rel = add(tree, "one-cluster/apps/ai/kueue/clusterrole.peek.yaml", role("peek", SECRETS_LIST))
    result = validate(tree)
    found = [ln for ln in result.stdout.splitlines() if ln.startswith(rel) and "ADM-001" in ln]
    assert found and "ClusterRole peek" in found[0] and "sitegen-secret-readers" in found[0]


def test_an_agent_named_by_the_deprecated_service_account_field_keeps_its_host_access(policies):
    """csi-isilon's chart names its node plugin's account in `serviceAccount` only; the API server's v1
    conversion copies it to `serviceAccountName`, so the pod is admitted as csi-isilon-node, and the
    host-access policy must list that account (listing isilon/default refused the plugin on a real
    cluster while every offline check agreed with itself)."""
    docs = {d.name: d for d in load_tree(DIST) if d.variant == "one-cluster" and d.kind == "DaemonSet"}
    plugin = docs["csi-isilon-node"]
    spec = plugin.body["spec"]["template"]["spec"]
    assert "serviceAccountName" not in spec and spec["serviceAccount"] == "csi-isilon-node"
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": plugin.namespace, "name": "csi-isilon-node-x"},
        "spec": {**spec, "serviceAccountName": spec["serviceAccount"]},  # the conversion's copy
    }  # fmt: skip
    policy = policies["sitegen-host-access"]
    assert policy.matches(pod, {}, "CREATE")
    assert policy.refusal(pod, Request("system:serviceaccount:kube-system:daemon-set-controller")) is None


GUARD = Request("system:serviceaccount:gpu-node-guard:gpu-node-guard", operation="UPDATE")
NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu03", "labels": {"node-role.kubernetes.io/gpu": "true"}, "annotations": {"a": "b"}},
    "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
}  # fmt: skip


def _changed(change) -> dict:
    import copy

    node = copy.deepcopy(NODE)
    node["spec"]["unschedulable"] = True
    node["metadata"]["labels"]["sitegen.io/auto-cordoned"] = "gpu-fatal-xid"
    change(node)
    return node


@pytest.mark.parametrize(
    ("node", "request_", "admitted"),
    [
        (_changed(lambda n: None), GUARD, True),  # cordon and label: what the guard does
        (_changed(lambda n: n["spec"].pop("taints")), GUARD, False),  # lifts the GPU taint
        (
            _changed(lambda n: n["metadata"]["labels"].update({"node-role.kubernetes.io/gpu": "x"})),
            GUARD,
            False,
        ),
        (_changed(lambda n: n["metadata"]["annotations"].update({"c": "d"})), GUARD, False),
        (_changed(lambda n: n["spec"].update({"unschedulable": False})), GUARD, False),  # never uncordons
        (_changed(lambda n: n["spec"].pop("taints")), Request("system:node:gpu03", operation="UPDATE"), True),
    ],
)
def test_the_gpu_node_guard_may_only_cordon_and_label(policies, node, request_, admitted):
    policy = policies["sitegen-guard-cordons-only"]
    assert policy.matches(node, None, "UPDATE") and not policy.matches(node, None, "CREATE")
    assert (policy.refusal(node, request_, NODE) is None) is admitted
