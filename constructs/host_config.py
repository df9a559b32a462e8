"""Typed host config kinds: kubeadm (v1beta4), kubelet, API server admission and audit policy.

No schema package ships these kinds. The constructs build their documents from these models, and
`validate` checks the rendered files against the same models: the fields we write, with the upstream
types' names, and nothing else (a misspelt field is an error, as it is in kubeadm's strict decoding).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
PsaLevel = Literal["privileged", "baseline", "restricted"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class HostConfig(_Doc):
    """A top-level host config document: `apiVersion` and `kind` are fixed per class."""

    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]

    def document(self) -> dict[str, Any]:
        """The document as written: the fields set, plus apiVersion and kind."""
        body = self.model_dump(by_alias=True, exclude_unset=True, mode="json")
        return {**body, "apiVersion": self.API_VERSION, "kind": self.KIND}


class Arg(_Doc):
    name: str
    value: str


class Taint(_Doc):
    key: str
    value: str | None = None
    effect: TaintEffect


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


class Patches(_Doc):
    directory: str


class InitConfiguration(HostConfig):
    API_VERSION = "kubeadm.k8s.io/v1beta4"
    KIND = "InitConfiguration"
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"] = "kubeadm.k8s.io/v1beta4"
    kind: Literal["InitConfiguration"] = "InitConfiguration"
    bootstrapTokens: list[BootstrapToken] = []
    certificateKey: str | None = None
    localAPIEndpoint: LocalAPIEndpoint
    nodeRegistration: NodeRegistration
    patches: Patches | None = None


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


class ClusterConfiguration(HostConfig):
    API_VERSION = "kubeadm.k8s.io/v1beta4"
    KIND = "ClusterConfiguration"
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"] = "kubeadm.k8s.io/v1beta4"
    kind: Literal["ClusterConfiguration"] = "ClusterConfiguration"
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


class JoinConfiguration(HostConfig):
    API_VERSION = "kubeadm.k8s.io/v1beta4"
    KIND = "JoinConfiguration"
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"] = "kubeadm.k8s.io/v1beta4"
    kind: Literal["JoinConfiguration"] = "JoinConfiguration"
    discovery: Discovery
    controlPlane: JoinControlPlane | None = None
    nodeRegistration: NodeRegistration
    patches: Patches | None = None


class Toggle(_Doc):
    enabled: bool


class KubeletAuthentication(_Doc):
    anonymous: Toggle
    webhook: Toggle


class KubeletAuthorization(_Doc):
    mode: Literal["AlwaysAllow", "Webhook"]


class KubeletConfiguration(HostConfig):
    API_VERSION = "kubelet.config.k8s.io/v1beta1"
    KIND = "KubeletConfiguration"
    apiVersion: Literal["kubelet.config.k8s.io/v1beta1"] = "kubelet.config.k8s.io/v1beta1"
    kind: Literal["KubeletConfiguration"] = "KubeletConfiguration"
    # every field optional: the cluster-wide file sets the first six, a pool's patch the reservations
    cgroupDriver: Literal["systemd", "cgroupfs"] | None = None
    authentication: KubeletAuthentication | None = None
    authorization: KubeletAuthorization | None = None
    readOnlyPort: int | None = None
    rotateCertificates: bool | None = None
    serverTLSBootstrap: bool | None = None
    seccompDefault: bool | None = None
    protectKernelDefaults: bool | None = None
    tlsCipherSuites: list[str] | None = None
    clusterDomain: str | None = None
    kubeReserved: dict[str, str] | None = None
    evictionHard: dict[str, str] | None = None


class PodSecurityDefaults(_Doc):
    enforce: PsaLevel
    enforce_version: str = Field(alias="enforce-version")
    audit: PsaLevel
    audit_version: str = Field(alias="audit-version")
    warn: PsaLevel
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


class EventRateLimit(_Doc):
    type: Literal["Server", "Namespace", "User", "SourceAndObject"]
    qps: int = Field(ge=1)
    burst: int = Field(ge=1)
    cacheSize: int | None = Field(default=None, ge=1)


class EventRateLimitConfiguration(_Doc):
    apiVersion: Literal["eventratelimit.admission.k8s.io/v1alpha1"]
    kind: Literal["Configuration"]
    limits: list[EventRateLimit]


class AdmissionPlugin(_Doc):
    name: Literal["PodSecurity", "EventRateLimit"]
    configuration: PodSecurityConfiguration | EventRateLimitConfiguration


class AdmissionConfiguration(HostConfig):
    API_VERSION = "apiserver.config.k8s.io/v1"
    KIND = "AdmissionConfiguration"
    apiVersion: Literal["apiserver.config.k8s.io/v1"] = "apiserver.config.k8s.io/v1"
    kind: Literal["AdmissionConfiguration"] = "AdmissionConfiguration"
    plugins: list[AdmissionPlugin]


class EncryptionKey(_Doc):
    name: str
    secret: str  # `${VAR}`: filled from the vault on the host, never in git


class EncryptionProvider(_Doc):
    secretbox: dict[str, list[EncryptionKey]] | None = None
    identity: dict[str, str] | None = None  # reads what was written before encryption


class EncryptedResources(_Doc):
    resources: list[str]
    providers: list[EncryptionProvider]


class EncryptionConfiguration(HostConfig):
    API_VERSION = "apiserver.config.k8s.io/v1"
    KIND = "EncryptionConfiguration"
    apiVersion: Literal["apiserver.config.k8s.io/v1"] = "apiserver.config.k8s.io/v1"
    kind: Literal["EncryptionConfiguration"] = "EncryptionConfiguration"
    resources: list[EncryptedResources]


class GroupResources(_Doc):
    group: str
    resources: list[str] = []


class AuditRule(_Doc):
    level: Literal["None", "Metadata", "Request", "RequestResponse"]
    users: list[str] = []
    verbs: list[str] = []
    resources: list[GroupResources] = []
    nonResourceURLs: list[str] = []


class AuditPolicy(HostConfig):
    API_VERSION = "audit.k8s.io/v1"
    KIND = "Policy"
    apiVersion: Literal["audit.k8s.io/v1"] = "audit.k8s.io/v1"
    kind: Literal["Policy"] = "Policy"
    omitStages: list[str] = []
    rules: list[AuditRule] = Field(min_length=1)


class AnonymousCondition(_Doc):
    path: str


class Anonymous(_Doc):
    enabled: bool
    conditions: list[AnonymousCondition] = []


class AuthenticationConfiguration(HostConfig):
    """The API server's structured authentication (GA in 1.34): here, who may stay anonymous."""

    API_VERSION = "apiserver.config.k8s.io/v1"
    KIND = "AuthenticationConfiguration"
    apiVersion: Literal["apiserver.config.k8s.io/v1"] = "apiserver.config.k8s.io/v1"
    kind: Literal["AuthenticationConfiguration"] = "AuthenticationConfiguration"
    anonymous: Anonymous


HOST_CONFIG_MODELS: dict[tuple[str, str], type[HostConfig]] = {
    (m.API_VERSION, m.KIND): m
    for m in (
        InitConfiguration,
        ClusterConfiguration,
        JoinConfiguration,
        KubeletConfiguration,
        AdmissionConfiguration,
        AuditPolicy,
        AuthenticationConfiguration,
        EncryptionConfiguration,
    )
}
