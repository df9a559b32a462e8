"""Hardening the security review asked for (issue 26), checked on the rendered dist/: the API server
verifies the kubelets it calls, and no pod mounts a host directory holding a CA's private key."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from sitegen.check.bringup.kube import pod_template
from sitegen.check.bringup.runtime import written_kernel_settings
from sitegen.model.hosts import KUBELET_KERNEL_TUNABLES
from sitegen.tree.documents import load_tree

from .conftest import DIST

PKI = PurePosixPath("/etc/kubernetes/pki")


@pytest.fixture(scope="module")
def docs():
    return load_tree(DIST)


def test_the_api_server_verifies_the_kubelets_serving_certificates(docs):
    """CIS 1.2.5: --kubelet-certificate-authority, which works because every kubelet asks the cluster
    CA for its serving certificate (serverTLSBootstrap) instead of signing its own."""
    inits = [d for d in docs if d.kind == "ClusterConfiguration"]
    assert inits
    for doc in inits:
        args = {a["name"]: a["value"] for a in doc.body["apiServer"]["extraArgs"]}
        assert args["kubelet-certificate-authority"] == str(PKI / "ca.crt"), doc.file
        kubelets = [d for d in docs if d.kind == "KubeletConfiguration" and d.file == doc.file]
        assert kubelets and all(k.body.get("serverTLSBootstrap") is True for k in kubelets), doc.file


def test_every_kubelet_defaults_to_the_runtimes_seccomp_profile(docs):
    """A pod that names no seccomp profile runs confined (RuntimeDefault), on every node of both
    variants: the cluster-wide KubeletConfiguration every node downloads at its join says so."""
    kubelets = [d for d in docs if d.kind == "KubeletConfiguration" and d.body.get("cgroupDriver")]
    assert {d.variant for d in kubelets} == {"one-cluster", "two-cluster"}
    assert all(d.body.get("seccompDefault") is True for d in kubelets), [d.file for d in kubelets]


def test_every_kubelet_checks_its_kernel_settings_and_speaks_strong_tls_only(docs):
    """CIS 4.2.6 and 4.2.12: the kubelet checks the kernel settings it needs instead of setting them
    (protectKernelDefaults), so every host's baseline writes them; it serves only the strong suites."""
    kubelets = [d for d in docs if d.kind == "KubeletConfiguration" and d.body.get("cgroupDriver")]
    assert kubelets
    for doc in kubelets:
        assert doc.body.get("protectKernelDefaults") is True, doc.file
        suites = doc.body.get("tlsCipherSuites") or []
        assert suites and all(s.startswith("TLS_ECDHE_") and ("GCM" in s or "CHACHA20" in s) for s in suites)
    preps = sorted(DIST.glob("*/kubeadm/*/host-prep-*.sh"))
    assert {p.parts[-4] for p in preps} == {"one-cluster", "two-cluster"}
    for prep in preps:
        written = written_kernel_settings(prep.read_text())
        assert KUBELET_KERNEL_TUNABLES.items() <= written.items(), prep


def test_kube_vip_serves_its_metrics_on_the_loopback_only(docs):
    """kube-vip runs on the host's network: its metrics listener on every address answered anyone on
    the node's networks (security review L2), and nothing scrapes it."""
    pods = [d for d in docs if d.kind == "Pod" and d.name == "kube-vip"]
    assert {d.variant for d in pods} == {"one-cluster", "two-cluster"}
    for pod in pods:
        (container,) = pod.body["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["prometheus_server"].startswith("127.0.0.1:"), pod.file


def test_the_node_log_collector_opens_no_host_port(docs):
    """The chart opens six receiver ports on every node's address (OTLP, Jaeger, Zipkin) for traces
    and metrics the node collector, a log shipper, neither gets nor keeps (security review L7)."""
    agents = [d for d in docs if d.kind == "DaemonSet" and d.name == "otel-node-agent"]
    assert {d.variant for d in agents} == {"one-cluster", "two-cluster"}
    for agent in agents:
        containers = agent.body["spec"]["template"]["spec"]["containers"]
        assert not [p for c in containers for p in c.get("ports") or [] if p.get("hostPort")], agent.file


def _as_root(spec: dict) -> bool:
    """Some container may run as root (uid 0, or no user and no runAsNonRoot): the keys are 0600 root."""
    pod = spec.get("securityContext") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        ctx = {**pod, **(c.get("securityContext") or {})}
        if ctx.get("runAsUser") == 0 or ("runAsUser" not in ctx and ctx.get("runAsNonRoot") is not True):
            return True
    return False


def test_no_root_pod_mounts_a_host_folder_with_a_ca_key(docs):
    """A root pod that mounts /etc/kubernetes/pki (or a folder holding it, or etcd's part of it) can
    read a CA's key and mint any identity; the etcd backup takes the client certificate and the CA's
    certificate, file by file. (Node-exporter reads the host's root as nobody: the keys are 0600 root.)"""
    mounted = []
    for doc in docs:
        if doc.is_host_file:
            continue  # static pods of the control plane: kubeadm's own
        template = pod_template(doc.body)
        if template is None:
            continue
        for volume in template.spec.get("volumes") or []:
            host = volume.get("hostPath")
            if not host:
                continue
            path = PurePosixPath(host["path"])
            if (PKI.is_relative_to(path) or path.is_relative_to(PKI)) and _as_root(dict(template.spec)):
                mounted.append((doc.ref, str(path), host.get("type")))
    assert mounted, "the etcd backup reads etcd's client certificate from the host"
    for ref, path, kind in mounted:
        assert kind == "File", (ref, path, kind)  # never a folder: nothing beside the files it names
        assert not path.endswith(".key") or path.endswith("-client.key"), (ref, path)


def _manager_bind_rule(docs):
    (role,) = [
        d for d in docs
        if d.variant == "two-cluster" and d.kind == "ClusterRole" and d.name == "argocd-manager"
    ]  # fmt: skip
    (rule,) = [r for r in role.body["rules"] if "bind" in r["verbs"]]
    return rule


def test_the_spoke_manager_binds_only_the_roles_its_apps_use(docs):
    """bind and escalate only with resourceNames: the roles the spoke's apps render, and those their
    bindings refer to (Velero's server binds cluster-admin, so the RUNBOOK says the token is as strong)."""
    rule = _manager_bind_rule(docs)
    assert rule["verbs"] == ["bind", "escalate"] and rule["resourceNames"]
    spoke = [d for d in docs if d.variant == "two-cluster" and d.cluster == "aistor"]
    refs = {d.body["roleRef"]["name"] for d in spoke if d.kind in ("ClusterRoleBinding", "RoleBinding")}
    rendered = {d.name for d in spoke if d.kind in ("ClusterRole", "Role")}
    assert set(rule["resourceNames"]) == refs | rendered
    runbook = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    assert ("cluster-admin" in rule["resourceNames"]) == ("as strong as cluster-admin" in runbook)


def test_a_binding_the_spoke_manager_may_not_make(site, inputs):
    """The API server refuses a binding to a role its creator may not bind: without cluster-admin among
    the manager's names, Velero's server binding on the spoke never syncs."""
    from .bringup_cases import TWO, blocked, edited, run

    def narrower(doc):
        for rule in doc["rules"]:
            if "bind" in rule["verbs"]:
                rule["resourceNames"].remove("cluster-admin")

    tree = edited(inputs, TWO, "two-cluster/apps/aistor/argocd-manager/clusterrole.argocd-manager", narrower)
    blocked(run(site, inputs, TWO, tree=tree), "aistor-velero", "may not bind ClusterRole cluster-admin")


def test_secrets_are_encrypted_at_rest_with_a_key_from_the_vault(docs):
    """A generated EncryptionConfiguration (secretbox first, identity last to read what came before),
    its key only as ${ENCRYPTION_KEY}; the RUNBOOK makes the key once in the vault, fills it in on every
    control-plane host before init, and checks etcd holds a Secret with the provider's prefix."""
    configs = [d for d in docs if d.kind == "EncryptionConfiguration"]
    assert {d.cluster for d in configs} == {"ai", "aistor"}
    for doc in configs:
        (entry,) = doc.body["resources"]
        assert entry["resources"] == ["secrets"]
        first, last = entry["providers"][0], entry["providers"][-1]
        assert first["secretbox"]["keys"] == [{"name": "key1", "secret": "${ENCRYPTION_KEY}"}] and last == {
            "identity": {}
        }
    for variant in ("one-cluster", "two-cluster"):
        runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
        install = runbook.index("install -D -m 0600 /dev/stdin /etc/kubernetes/enc/enc.yaml")
        assert runbook.index("vault kv put -cas=0 secret/kubernetes/ai/encryption") < install
        assert install < runbook.index("kubeadm init")
        assert "grep -q 'k8s:enc:secretbox:v1:key1:'" in runbook


def test_an_api_server_whose_encryption_config_was_never_placed(site, inputs):
    from .bringup_cases import ONE, blocked, run, runbook_without

    texts = runbook_without(inputs, ONE, r"^envsubst < \S+/encryption-config\.yaml \| install .*$")
    blocked(
        run(site, inputs, ONE, texts=texts),
        "kubeadm",
        "kube-apiserver does not start",
        "/etc/kubernetes/enc/enc.yaml",
    )
