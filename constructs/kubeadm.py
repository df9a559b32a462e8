"""kubeadm v1beta4 configuration of one cluster: init, control-plane joins, one worker join per pool.

Nothing secret is rendered. Bootstrap tokens, the certificate key and the CA hash are shell
variables (`${KUBEADM_TOKEN}` ...) that the runbook fills in with `envsubst` on the host.
"""

from __future__ import annotations

from constructs import Construct
from constructs import host_config as api
from constructs.api_server_policies import (
    ADMISSION_CONFIG,
    AUDIT_POLICY,
    AUTHENTICATION_CONFIG,
    ENCRYPTION_CONFIG,
    ApiServerPolicies,
)
from constructs.host_file import HostFile, config_document
from sitegen.model import ClusterLayout, Host, PoolLayout

KUBEADM_PKI = "/etc/kubernetes/pki"  # kubeadm's certificatesDir (its default)
CRI_SOCKET = "unix:///var/run/containerd/containerd.sock"
CGROUP_DRIVER = "systemd"  # the kubelet's; containerd's runc uses the same (compose/containerd.py)

# The API server writes its audit log here, on the host (the policy files it reads: api_server_policies.py).
AUDIT_LOG_DIR = "/var/log/kubernetes/audit"

# kubeadm applies `kubeletconfiguration+strategic.yaml` from here over the cluster-wide kubelet
# configuration of the node it inits or joins: how a pool gets its own reservations.
PATCHES_DIR = "/etc/kubernetes/patches"
KUBELET_PATCH = "kubeletconfiguration+strategic.yaml"

# CIS 1.2.x: NodeRestriction; no Service externalIPs (CVE-2020-8554); a cap on Events, which every
# controller can be made to flood; and tolerations limited per namespace (tenants may tolerate the GPU
# taint and nothing else: see the tenant namespaces' tolerationsWhitelist). AlwaysPullImages is not
# on: it would make every pod start depend on Harbor and the upstream being reachable.
ADMISSION_PLUGINS = (
    "NodeRestriction",
    "DenyServiceExternalIPs",
    "EventRateLimit",
    "PodTolerationRestriction",
)

TOKEN = "${KUBEADM_TOKEN}"
CA_CERT_HASH = "${KUBEADM_CA_CERT_HASH}"
CERTIFICATE_KEY = "${KUBEADM_CERTIFICATE_KEY}"

# CIS Kubernetes Benchmark 1.2.x (the API server) and 4.2.12 (the kubelet): strong TLS suites only.
# ECDSA ones too: a kubelet's serving key, which it makes for its CSR, is ECDSA P-256.
STRONG_CIPHER_SUITES = [
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
]

_SECRETS_HEADER = (
    "Secrets are never rendered: export KUBEADM_TOKEN (kubeadm token generate), KUBEADM_CERTIFICATE_KEY\n"
    "(kubeadm certs certificate-key) and KUBEADM_CA_CERT_HASH (sha256:<hash of the cluster CA public key>)\n"
    "from the site vault, then: envsubst < {file} > /tmp/kubeadm.yaml"
)


def _args(**flags: str) -> list[api.Arg]:
    """v1beta4 extra args are a list of {name, value}; keyword order is kept."""
    return [api.Arg(name=name.replace("_", "-"), value=value) for name, value in flags.items()]


def _taints(pool: PoolLayout) -> list[api.Taint]:
    return [api.Taint(**t.model_dump(exclude_none=True)) for t in pool.taints]


def _discovery(cluster: ClusterLayout) -> api.Discovery:
    return api.Discovery(
        bootstrapToken=api.BootstrapTokenDiscovery(
            apiServerEndpoint=cluster.spec.api.endpoint, token=TOKEN, caCertHashes=[CA_CERT_HASH]
        )
    )


def _self_settable(labels: dict[str, str]) -> dict[str, str]:
    """Labels a kubelet may set at registration: nothing in the kubernetes.io / k8s.io namespaces."""
    reserved = ("kubernetes.io/", "k8s.io/")
    return {k: v for k, v in labels.items() if not any(k.startswith(r) or f".{r}" in k for r in reserved)}


class ClusterConfiguration(Construct):
    """Cluster-wide kubeadm settings: stacked etcd, API endpoint on the VIP, CIS-hardened flags."""

    def __init__(self, scope: HostFile, id: str, *, cluster: ClusterLayout, kubernetes_version: str) -> None:
        super().__init__(scope, id)
        spec = cluster.spec
        config_document(
            self,
            api.ClusterConfiguration(
                clusterName=cluster.name,
                kubernetesVersion=kubernetes_version,
                controlPlaneEndpoint=spec.api.endpoint,
                networking=api.Networking(
                    podSubnet=str(spec.pod_cidr),
                    serviceSubnet=str(spec.service_cidr),
                    dnsDomain=spec.dns_domain,
                ),
                # Cilium replaces kube-proxy (kube-proxy replacement against the API VIP).
                proxy=api.Proxy(disabled=True),
                etcd=api.Etcd(
                    local=api.LocalEtcd(
                        dataDir="/var/lib/etcd",
                        # /metrics and /health stay on kubeadm's 127.0.0.1:2381 here; each member's
                        # patch (etcd_metrics_patch) adds its own node address, never 0.0.0.0
                        extraArgs=_args(quota_backend_bytes=str(spec.etcd_quota_gib * 2**30)),
                    )
                ),
                apiServer=api.ApiServer(
                    certSANs=[spec.api.dns_name, str(spec.api.vip)],
                    extraArgs=_args(
                        profiling="false",
                        audit_log_path=f"{AUDIT_LOG_DIR}/audit.log",
                        audit_log_maxage="30",
                        audit_log_maxbackup="10",
                        audit_log_maxsize="100",
                        audit_policy_file=AUDIT_POLICY,
                        encryption_provider_config=ENCRYPTION_CONFIG,
                        admission_control_config_file=ADMISSION_CONFIG,
                        authentication_config=AUTHENTICATION_CONFIG,
                        # DenyServiceExternalIPs: no Service may claim an external IP (CVE-2020-8554)
                        enable_admission_plugins=",".join(ADMISSION_PLUGINS),
                        tls_cipher_suites=",".join(STRONG_CIPHER_SUITES),
                        # kubelets serve certificates of the cluster CA (serverTLSBootstrap, approved by
                        # kubelet-csr-approver): the API server verifies them (CIS 1.2.5)
                        kubelet_certificate_authority=f"{KUBEADM_PKI}/ca.crt",
                    ),
                    extraVolumes=[
                        _mount("audit-policy", AUDIT_POLICY.rsplit("/", 1)[0], read_only=True),
                        _mount("audit-log", AUDIT_LOG_DIR, read_only=False),
                        _mount("admission", ADMISSION_CONFIG.rsplit("/", 1)[0], read_only=True),
                        _mount("authentication", AUTHENTICATION_CONFIG.rsplit("/", 1)[0], read_only=True),
                        _mount("encryption", ENCRYPTION_CONFIG.rsplit("/", 1)[0], read_only=True),
                    ],
                ),
                controllerManager=api.ControlPlaneComponent(
                    extraArgs=_args(profiling="false", terminated_pod_gc_threshold="10")
                ),
                scheduler=api.ControlPlaneComponent(extraArgs=_args(profiling="false")),
            ),
        )


def _mount(name: str, path: str, *, read_only: bool) -> api.HostPathMount:
    return api.HostPathMount(
        name=name, hostPath=path, mountPath=path, readOnly=read_only, pathType="DirectoryOrCreate"
    )


def _registration(
    host_name: str, node_ip: str, taints: list[api.Taint], **extra: str
) -> api.NodeRegistration:
    # node-ip is explicit: on hosts with management, 100GbE and IPoIB interfaces the kubelet's guess
    # (or kube-vip's VIP) must not become the node's InternalIP.
    return api.NodeRegistration(
        name=host_name, criSocket=CRI_SOCKET, kubeletExtraArgs=_args(node_ip=node_ip, **extra), taints=taints
    )


def _local_endpoint(cluster: ClusterLayout, host: Host) -> api.LocalAPIEndpoint:
    return api.LocalAPIEndpoint(advertiseAddress=str(host.address), bindPort=cluster.spec.api.port)


def _control_plane_registration(cluster: ClusterLayout, host: Host) -> api.NodeRegistration:
    return _registration(host.name, str(host.address), _taints(cluster.control_plane))


class InitConfiguration(Construct):
    """The first control-plane node: `kubeadm init --upload-certs`."""

    def __init__(self, scope: HostFile, id: str, *, cluster: ClusterLayout, host: Host) -> None:
        super().__init__(scope, id)
        config_document(
            self,
            api.InitConfiguration(
                bootstrapTokens=[
                    api.BootstrapToken(
                        token=TOKEN,
                        ttl="2h0m0s",
                        usages=["signing", "authentication"],
                        groups=["system:bootstrappers:kubeadm:default-node-token"],
                    )
                ],
                certificateKey=CERTIFICATE_KEY,
                localAPIEndpoint=_local_endpoint(cluster, host),
                nodeRegistration=_control_plane_registration(cluster, host),
                patches=api.Patches(directory=PATCHES_DIR),
            ),
        )


ETCD_METRICS_PORT = 2381
ETCD_PATCH = "etcd+json.yaml"


def etcd_patch_file(host: str) -> str:
    return f"etcd-{host}.yaml"


def etcd_metrics_patch(host: Host) -> str:
    """A JSON patch of the member's etcd static pod: metrics on loopback and the node's own address
    (where Prometheus scrapes), not on every interface (management, IPoIB). etcd takes the last
    --listen-metrics-urls it is given, so appending overrides kubeadm's loopback-only default."""
    urls = f"http://127.0.0.1:{ETCD_METRICS_PORT},http://{host.address}:{ETCD_METRICS_PORT}"
    return f"- op: add\n  path: /spec/containers/0/command/-\n  value: --listen-metrics-urls={urls}\n"


def kubelet_patch_file(pool: PoolLayout) -> str:
    return f"kubelet-{pool.name}.yaml"


class KubeletReservations(Construct):
    """A pool's kubelet patch: the share of its hardware pods cannot request (the model computes it)."""

    def __init__(self, scope: HostFile, id: str, *, pool: PoolLayout) -> None:
        super().__init__(scope, id)
        config_document(self, api.KubeletConfiguration(kubeReserved=pool.hardware.kubelet_reserved()))


class KubeletConfiguration(Construct):
    """Kubelet defaults kubeadm uploads at init and every joining node downloads."""

    def __init__(self, scope: HostFile, id: str, *, cluster: ClusterLayout) -> None:
        super().__init__(scope, id)
        config_document(
            self,
            api.KubeletConfiguration(
                cgroupDriver=CGROUP_DRIVER,
                authentication=api.KubeletAuthentication(
                    anonymous=api.Toggle(enabled=False), webhook=api.Toggle(enabled=True)
                ),
                authorization=api.KubeletAuthorization(mode="Webhook"),
                readOnlyPort=0,
                rotateCertificates=True,
                # serving certificate from the cluster CA (approved by kubelet-csr-approver), not
                # self-signed: the kubelet's clients verify it
                serverTLSBootstrap=True,
                # a pod that names no seccomp profile runs under the runtime's default, not unconfined
                # (privileged containers stay unconfined, as the kubelet does for them)
                seccompDefault=True,
                # the kubelet checks the kernel settings it needs instead of overwriting the host's
                # (CIS 4.2.6): the host baseline writes them (hosts.yaml's kernel_settings)
                protectKernelDefaults=True,
                tlsCipherSuites=STRONG_CIPHER_SUITES,
                clusterDomain=cluster.spec.dns_domain,
            ),
        )


class ControlPlaneJoin(Construct):
    """A further control-plane node joining the stacked etcd; joined one at a time."""

    def __init__(self, scope: HostFile, id: str, *, cluster: ClusterLayout, host: Host) -> None:
        super().__init__(scope, id)
        config_document(
            self,
            api.JoinConfiguration(
                discovery=_discovery(cluster),
                controlPlane=api.JoinControlPlane(
                    localAPIEndpoint=_local_endpoint(cluster, host), certificateKey=CERTIFICATE_KEY
                ),
                nodeRegistration=_control_plane_registration(cluster, host),
                patches=api.Patches(directory=PATCHES_DIR),
            ),
        )


class WorkerJoin(Construct):
    """The join of every host of one worker pool: the pool's taints are set at registration.

    NodeRestriction lets a kubelet taint itself only when it registers, so this is the one moment
    a GPU or AIStor node can come up already tainted. Host name and address are per-host variables.
    """

    def __init__(self, scope: HostFile, id: str, *, cluster: ClusterLayout, pool: PoolLayout) -> None:
        super().__init__(scope, id)
        labels = _self_settable(pool.labels)
        extra = {"node_labels": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else {}
        config_document(
            self,
            api.JoinConfiguration(
                discovery=_discovery(cluster),
                nodeRegistration=_registration("${NODE_NAME}", "${NODE_IP}", _taints(pool), **extra),
                patches=api.Patches(directory=PATCHES_DIR),
            ),
        )


def _inventory(pool: PoolLayout) -> str:
    pairs = [f"{h.name}={h.address}" for h in pool.hosts]
    lines = [" ".join(pairs[i : i + 6]) for i in range(0, len(pairs), 6)]
    return "NODE_NAME=NODE_IP:\n" + "\n".join(f"  {line}" for line in lines)


class KubeadmConfigs(Construct):
    """Every kubeadm file of one cluster, named for the host or pool it is used on."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: ClusterLayout,
        kubernetes_version: str,
    ) -> None:
        super().__init__(scope, id)
        first, *others = cluster.control_plane.hosts
        init = HostFile(
            self,
            "Init",
            file_name=f"init-{first.name}.yaml",
            header=f"On {first.name} only: kubeadm init --upload-certs --config <this file after envsubst>.\n"
            + _SECRETS_HEADER.format(file=f"init-{first.name}.yaml"),
        )
        InitConfiguration(init, "InitConfiguration", cluster=cluster, host=first)
        ClusterConfiguration(
            init, "ClusterConfiguration", cluster=cluster, kubernetes_version=kubernetes_version
        )
        KubeletConfiguration(init, "KubeletConfiguration", cluster=cluster)

        for host in others:
            name = f"join-control-plane-{host.name}.yaml"
            join = HostFile(
                self,
                f"Join-{host.name}",
                file_name=name,
                header=f"On {host.name}, after the previous control-plane node is Ready: kubeadm join "
                "--config <this file after envsubst>.\n" + _SECRETS_HEADER.format(file=name),
            )
            ControlPlaneJoin(join, "JoinConfiguration", cluster=cluster, host=host)

        for pool in cluster.worker_pools:
            name = f"join-{pool.name}.yaml"
            join = HostFile(
                self,
                f"Join-{pool.name}",
                file_name=name,
                header=f"On every {pool.name} host: export NODE_NAME and NODE_IP from the list below, then "
                "kubeadm join --config <this file after envsubst>.\n"
                + _SECRETS_HEADER.format(file=name)
                + "\n"
                + _inventory(pool),
            )
            WorkerJoin(join, "JoinConfiguration", cluster=cluster, pool=pool)

        for pool in cluster.pools:
            patch = HostFile(
                self,
                f"Kubelet-{pool.name}",
                file_name=kubelet_patch_file(pool),
                header=f"On every {pool.name} host, before kubeadm init/join: {PATCHES_DIR}/{KUBELET_PATCH}",
            )
            KubeletReservations(patch, "KubeletConfiguration", pool=pool)

        ApiServerPolicies(
            self,
            "ApiServerPolicies",
            kubernetes_minor=kubernetes_version.rsplit(".", 1)[0],
        )
