"""kubeadm v1beta4 files: one init, sequential control-plane joins, a tainted join per worker pool."""

from __future__ import annotations

import re

import pytest
import yaml
from cdk8s import App, Chart

from constructs.host_file import HostFile
from constructs.kube_vip import KubeVipStaticPod
from constructs.kubeadm import KubeadmConfigs
from sitegen.model import load_site, resolve

from .components.conftest import SMALL_SITE
from .conftest import DIST, validate
from .pins import pin_placeholders, unpinned


def _files(site, variant="one-cluster", cluster="ai"):
    layout = next(c for c in resolve(site, variant).clusters if c.name == cluster)
    chart = Chart(App(), "test")  # Testing.chart() leaves a temporary folder behind
    KubeadmConfigs(chart, "Kubeadm", cluster=layout, kubernetes_version=site.versions.kubernetes)
    return {f.file_name: f.documents() for f in chart.node.find_all() if isinstance(f, HostFile)}


def _kinds(docs):
    return [d["kind"] for d in docs]


def test_one_cluster_file_set(site):
    files = _files(site)
    assert sorted(files) == [
        "admission-config.yaml",
        "audit-policy.yaml",
        "authentication-config.yaml",
        "encryption-config.yaml",
        "init-cp01.yaml",
        "join-compute.yaml",
        "join-control-plane-cp02.yaml",
        "join-control-plane-cp03.yaml",
        "join-control-plane-cp04.yaml",
        "join-control-plane-cp05.yaml",
        "join-gpu.yaml",
        "join-infra.yaml",
        "join-storage.yaml",
        "kubelet-compute.yaml",
        "kubelet-control-plane.yaml",
        "kubelet-gpu.yaml",
        "kubelet-infra.yaml",
        "kubelet-storage.yaml",
    ]
    assert _kinds(files["init-cp01.yaml"]) == [
        "InitConfiguration",
        "ClusterConfiguration",
        "KubeletConfiguration",
    ]


def test_kubelet_reservations_per_pool_from_the_hardware(site):
    files = _files(site)
    (gpu,) = files["kubelet-gpu.yaml"]
    # 128 cores: 6 % + 1 % + 2 x 0.5 % + 124 x 0.25 % of a core; 2,000 GB = 1,907,348 MiB:
    # 25 % of 4 GiB + 20 % of 4 + 10 % of 8 + 6 % of 112 + 2 % of the rest
    assert gpu == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "kubeReserved": {"cpu": "390m", "memory": "45069Mi"},
    }
    (infra,) = files["kubelet-infra.yaml"]
    assert infra["kubeReserved"] == {"cpu": "310m", "memory": "25996Mi"}  # 96 cores, 1,000 GB
    for name, docs in files.items():
        if name.startswith(("join-", "init-")):
            assert docs[0]["patches"] == {"directory": "/etc/kubernetes/patches"}, name


def test_cluster_configuration(site):
    cluster = next(d for d in _files(site)["init-cp01.yaml"] if d["kind"] == "ClusterConfiguration")
    api = site.clusters["ai"].api
    assert cluster["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert cluster["controlPlaneEndpoint"] == f"{api.dns_name}:6443"
    assert cluster["apiServer"]["certSANs"] == [api.dns_name, str(api.vip)]
    assert "local" in cluster["etcd"]  # stacked etcd
    assert cluster["kubernetesVersion"] == site.versions.kubernetes
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["profiling"] == "false"
    assert int(args["audit-log-maxage"]) >= 30
    assert {"encryption-provider-config", "admission-control-config-file", "audit-policy-file"} <= set(args)
    assert "metadata" not in cluster  # kubeadm decodes strictly


@pytest.mark.parametrize(
    ("pool", "taints"),
    [
        ("gpu", [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        ("storage", [{"key": "dedicated", "value": "aistor", "effect": "NoSchedule"}]),
        ("infra", [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
        ("compute", []),
    ],
)
def test_worker_join_registers_the_pool_taints(site, pool, taints):
    (join,) = _files(site)[f"join-{pool}.yaml"]
    assert join["kind"] == "JoinConfiguration"
    assert "controlPlane" not in join
    assert join["nodeRegistration"]["taints"] == taints


def test_worker_join_never_self_sets_role_labels(site):
    """A kubelet exits fatally on --node-labels with node-role.kubernetes.io/*."""
    (join,) = _files(site)["join-gpu.yaml"]
    args = {a["name"]: a["value"] for a in join["nodeRegistration"]["kubeletExtraArgs"]}
    assert "kubernetes.io" not in args["node-labels"]
    assert "accelerator=nvidia-b300" in args["node-labels"]


def test_control_plane_keeps_its_taint(site):
    files = _files(site)
    for name in ["init-cp01.yaml", "join-control-plane-cp03.yaml"]:
        reg = files[name][0]["nodeRegistration"]
        assert reg["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    join = files["join-control-plane-cp03.yaml"][0]
    assert join["controlPlane"]["localAPIEndpoint"]["advertiseAddress"] == "10.20.0.13"


def test_no_secret_is_rendered(site):
    """Tokens and keys are envsubst variables; a real token (abcdef.0123456789abcdef) never appears."""
    text = repr(_files(site))
    assert not re.search(r"[a-z0-9]{6}\.[a-z0-9]{16}", text)
    assert "${KUBEADM_TOKEN}" in text and "${KUBEADM_CERTIFICATE_KEY}" in text


def test_aistor_cluster_uses_its_carved_control_plane(site):
    files = _files(site, "two-cluster", "aistor")
    assert sorted(n for n in files if n.startswith(("init", "join"))) == [
        "init-cmp48.yaml",
        "join-control-plane-cmp49.yaml",
        "join-control-plane-cmp50.yaml",
        "join-storage.yaml",
    ]
    cluster = files["init-cmp48.yaml"][1]
    assert cluster["clusterName"] == "aistor"
    assert cluster["networking"]["podSubnet"] == str(site.clusters["aistor"].pod_cidr)


def test_kubeadm_snapshot(snapshot):
    """Every host file kind, on the small fixture site (dist/ holds the 102-node files)."""
    small = load_site(SMALL_SITE)
    files = {variant: _files(small, variant, "ai") for variant in ("one-cluster", "two-cluster")}
    assert unpinned(files, pin_placeholders(small.versions)) == snapshot


@pytest.mark.parametrize("bootstrap", [True, False])
def test_kube_vip_static_pod(site, bootstrap):
    cluster = resolve(site, "one-cluster").clusters[0]
    chart = Chart(App(), "test")  # Testing.chart() leaves a temporary folder behind
    vip = KubeVipStaticPod(
        chart,
        "KubeVip",
        cluster=cluster,
        image=site.versions.images["kube-vip"],
        interface=site.network.kubernetes.interface,
        bootstrap=bootstrap,
    )
    (pod,) = vip.file.documents()
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["address"] == str(site.clusters["ai"].api.vip)
    assert env["lb_enable"] == "true"
    assert pod["spec"]["containers"][0]["image"] == site.versions.images["kube-vip"].ref
    kubeconfig = pod["spec"]["volumes"][0]["hostPath"]["path"]
    assert kubeconfig.endswith("super-admin.conf" if bootstrap else "/admin.conf")


def test_etcd_metrics_on_loopback_and_the_members_own_address(site):
    """Not 0.0.0.0: each member's patch adds its node address (where Prometheus scrapes) to loopback."""
    files = _files(site)
    init = next(d for d in files["init-cp01.yaml"] if d["kind"] == "ClusterConfiguration")
    assert "listen-metrics-urls" not in {a["name"] for a in init["etcd"]["local"]["extraArgs"]}
    for host in site.pools["control-plane"].hosts:
        text = (DIST / "one-cluster/kubeadm/ai" / f"etcd-{host.name}.yaml").read_text()
        (op,) = yaml.safe_load(text)
        assert op == {
            "op": "add",
            "path": "/spec/containers/0/command/-",
            "value": f"--listen-metrics-urls=http://127.0.0.1:2381,http://{host.address}:2381",
        }
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    assert "etcd-cp03.yaml /etc/kubernetes/patches/etcd+json.yaml" in runbook


def test_validate_checks_kubeadm_json_patches(tree):
    path = tree / "one-cluster/kubeadm/ai/etcd-cp02.yaml"
    path.write_text(path.read_text().replace("op: add", "op: append"))
    result = validate(tree)
    assert result.exit_code == 1
    assert "etcd-cp02.yaml [doc 0] : schema: $[0]: not a JSON patch operation" in result.stdout


def test_cis_admission_plugins_with_their_configuration(site):
    files = _files(site)
    cluster = next(d for d in files["init-cp01.yaml"] if d["kind"] == "ClusterConfiguration")
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["enable-admission-plugins"].split(",") == [
        "NodeRestriction",
        "DenyServiceExternalIPs",
        "EventRateLimit",
        "PodTolerationRestriction",
    ]
    (admission,) = files["admission-config.yaml"]
    plugins = {p["name"]: p["configuration"] for p in admission["plugins"]}
    assert {limit["type"] for limit in plugins["EventRateLimit"]["limits"]} == {"Server", "Namespace", "User"}
    assert plugins["PodSecurity"]["exemptions"]["runtimeClasses"] == []


def test_anonymous_requests_only_for_health_checks(site):
    files = _files(site)
    cluster = next(d for d in files["init-cp01.yaml"] if d["kind"] == "ClusterConfiguration")
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["authentication-config"] == "/etc/kubernetes/authn/authentication.yaml"
    assert "anonymous-auth" not in args  # the flag and the file's anonymous section exclude each other
    mounts = {m["hostPath"] for m in cluster["apiServer"]["extraVolumes"]}
    assert "/etc/kubernetes/authn" in mounts
    (authn,) = files["authentication-config.yaml"]
    assert authn["anonymous"] == {
        "enabled": True,
        "conditions": [{"path": "/livez"}, {"path": "/readyz"}, {"path": "/healthz"}],
    }


def test_a_kubeadm_configuration_with_its_secrets_is_root_s_alone_and_removed():
    """A join's configuration holds the bootstrap token and the certificate key: every init and join
    of every RUNBOOK reads it from where it was written 0600 on tmpfs, and removes it once done."""
    for runbook in sorted(DIST.glob("*/bootstrap/RUNBOOK.md")):
        lines = runbook.read_text().splitlines()
        uses = [i for i, line in enumerate(lines) if re.match(r"kubeadm (init|join) .*--config", line)]
        assert uses, runbook
        for i in uses:
            (config,) = re.findall(r"--config (\S+)", lines[i])
            written = [ln for ln in lines[:i] if ln.endswith(f"install -m 0600 /dev/stdin {config}")]
            assert written and config.startswith("/run/"), lines[i]
            assert lines[i].endswith(f"&& rm {config}"), lines[i]
        assert not [ln for ln in lines if "> /tmp/" in ln], runbook
