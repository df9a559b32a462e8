"""Typed schemas of the host config files we render (kubeadm, kubelet, API server admission, audit).

No schema package ships these kinds, so `validate` checks them with these models: the fields we
write, with the upstream types' names, and nothing else (a misspelt field is an error, as it is in
kubeadm's strict decoding).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Arg(_Doc):
    name: str
    value: str


class Taint(_Doc):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeRegistration(_Doc):
    name: str
    criSocket: str
    kubeletExtraArgs: list[Arg] = []
    taints: list[Taint] | None = None


class LocalAPIEndpoint(_Doc):
    advertiseAddress: str
    bindPort: int = Field(ge=1, le=65535)


class BootstrapToken(_Doc):
    token: str
    ttl: str
    usages: list[Literal["signing", "authentication"]]
    groups: list[str]


class InitConfiguration(_Doc):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["InitConfiguration"]
    bootstrapTokens: list[BootstrapToken] = []
    certificateKey: str | None = None
    localAPIEndpoint: LocalAPIEndpoint
    nodeRegistration: NodeRegistration


class HostPathMount(_Doc):
    name: str
    hostPath: str
    mountPath: str
    readOnly: bool = False
    pathType: Literal[
        "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"
    ]


class ControlPlaneComponent(_Doc):
    extraArgs: list[Arg] = []
    extraVolumes: list[HostPathMount] = []


class ApiServer(ControlPlaneComponent):
    certSANs: list[str] = []


class LocalEtcd(_Doc):
    dataDir: str
    extraArgs: list[Arg] = []


class Etcd(_Doc):
    local: LocalEtcd


class Networking(_Doc):
    podSubnet: str
    serviceSubnet: str
    dnsDomain: str


class Proxy(_Doc):
    disabled: bool


class ClusterConfiguration(_Doc):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["ClusterConfiguration"]
    clusterName: str
    kubernetesVersion: str = Field(pattern=r"^v1\.\d+\.\d+$")
    controlPlaneEndpoint: str
    networking: Networking
    proxy: Proxy
    etcd: Etcd
    apiServer: ApiServer
    controllerManager: ControlPlaneComponent
    scheduler: ControlPlaneComponent


class BootstrapTokenDiscovery(_Doc):
    apiServerEndpoint: str
    token: str
    caCertHashes: list[str] = Field(min_length=1)


class Discovery(_Doc):
    bootstrapToken: BootstrapTokenDiscovery


class JoinControlPlane(_Doc):
    localAPIEndpoint: LocalAPIEndpoint
    certificateKey: str


class JoinConfiguration(_Doc):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["JoinConfiguration"]
    discovery: Discovery
    controlPlane: JoinControlPlane | None = None
    nodeRegistration: NodeRegistration


class KubeletConfiguration(_Doc):
    apiVersion: Literal["kubelet.config.k8s.io/v1beta1"]
    kind: Literal["KubeletConfiguration"]
    cgroupDriver: Literal["systemd", "cgroupfs"]
    authentication: dict[str, Any]
    authorization: dict[str, Any]
    readOnlyPort: int
    rotateCertificates: bool
    clusterDomain: str


class PodSecurityDefaults(_Doc):
    enforce: Literal["privileged", "baseline", "restricted"]
    enforce_version: str = Field(alias="enforce-version")
    audit: Literal["privileged", "baseline", "restricted"]
    audit_version: str = Field(alias="audit-version")
    warn: Literal["privileged", "baseline", "restricted"]
    warn_version: str = Field(alias="warn-version")


class PodSecurityExemptions(_Doc):
    usernames: list[str] = []
    runtimeClasses: list[str] = []
    namespaces: list[str] = []


class PodSecurityConfiguration(_Doc):
    apiVersion: Literal["pod-security.admission.config.k8s.io/v1"]
    kind: Literal["PodSecurityConfiguration"]
    defaults: PodSecurityDefaults
    exemptions: PodSecurityExemptions


class AdmissionPlugin(_Doc):
    name: Literal["PodSecurity"]
    configuration: PodSecurityConfiguration


class AdmissionConfiguration(_Doc):
    apiVersion: Literal["apiserver.config.k8s.io/v1"]
    kind: Literal["AdmissionConfiguration"]
    plugins: list[AdmissionPlugin]


class GroupResources(_Doc):
    group: str
    resources: list[str] = []


class AuditRule(_Doc):
    level: Literal["None", "Metadata", "Request", "RequestResponse"]
    users: list[str] = []
    verbs: list[str] = []
    resources: list[GroupResources] = []
    nonResourceURLs: list[str] = []


class AuditPolicy(_Doc):
    apiVersion: Literal["audit.k8s.io/v1"]
    kind: Literal["Policy"]
    omitStages: list[str] = []
    rules: list[AuditRule] = Field(min_length=1)


# --- cluster kinds whose CRD is not among shared/crds -------------------------------------------
# Typed models of exactly the fields we render, with the upstream names; metadata as ObjectMeta's
# name/labels/annotations. Replace them by the real CRDs once those are added to shared/crds.


class _Meta(_Doc):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class VolumeSnapshotClass(_Doc):
    """snapshot.storage.k8s.io/v1 (kubernetes-csi/external-snapshotter)."""

    apiVersion: Literal["snapshot.storage.k8s.io/v1"]
    kind: Literal["VolumeSnapshotClass"]
    metadata: _Meta
    driver: str
    deletionPolicy: Literal["Delete", "Retain"]
    parameters: dict[str, str] = {}


class LabelSelector(_Doc):
    matchLabels: dict[str, str] = {}


class L2AnnouncementSpec(_Doc):
    nodeSelector: LabelSelector | None = None
    serviceSelector: LabelSelector | None = None
    interfaces: list[str] = []
    externalIPs: bool = False
    loadBalancerIPs: bool = False


class CiliumL2AnnouncementPolicy(_Doc):
    """cilium.io/v2alpha1 (Cilium 1.20)."""

    apiVersion: Literal["cilium.io/v2alpha1"]
    kind: Literal["CiliumL2AnnouncementPolicy"]
    metadata: _Meta
    spec: L2AnnouncementSpec


class EnvoyPod(_Doc):
    nodeSelector: dict[str, str] = {}
    tolerations: list[dict[str, str]] = []


class EnvoyDeployment(_Doc):
    replicas: int
    pod: EnvoyPod


class EnvoyService(_Doc):
    type: Literal["LoadBalancer", "ClusterIP", "NodePort"]
    annotations: dict[str, str] = {}


class EnvoyKubernetes(_Doc):
    envoyDeployment: EnvoyDeployment
    envoyService: EnvoyService


class EnvoyProvider(_Doc):
    type: Literal["Kubernetes"]
    kubernetes: EnvoyKubernetes


class EnvoyProxySpec(_Doc):
    provider: EnvoyProvider


class EnvoyProxy(_Doc):
    """gateway.envoyproxy.io/v1alpha1 (Envoy Gateway v1.9)."""

    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["EnvoyProxy"]
    metadata: _Meta
    spec: EnvoyProxySpec


class PolicyTarget(_Doc):
    group: Literal["gateway.networking.k8s.io"]
    kind: Literal["HTTPRoute", "Gateway"]
    name: str


class SecretRef(_Doc):
    name: str


class BasicAuth(_Doc):
    users: SecretRef  # a Secret whose `.htpasswd` key holds {SHA} htpasswd lines


class SecurityPolicySpec(_Doc):
    targetRefs: list[PolicyTarget]
    basicAuth: BasicAuth


class SecurityPolicy(_Doc):
    """gateway.envoyproxy.io/v1alpha1 SecurityPolicy, basic authentication only (Envoy Gateway v1.9)."""

    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["SecurityPolicy"]
    metadata: _Meta
    spec: SecurityPolicySpec


HOST_CONFIG_MODELS: dict[tuple[str, str], type[_Doc]] = {
    (m.model_fields["apiVersion"].annotation.__args__[0], m.model_fields["kind"].annotation.__args__[0]): m
    for m in (
        InitConfiguration,
        ClusterConfiguration,
        JoinConfiguration,
        KubeletConfiguration,
        AdmissionConfiguration,
        AuditPolicy,
        VolumeSnapshotClass,
        CiliumL2AnnouncementPolicy,
        EnvoyProxy,
        SecurityPolicy,
    )
}
