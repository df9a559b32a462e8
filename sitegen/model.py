"""The site model: the typed form of config/, validated once, with every derived figure computed.

Each top-level field of `Site` is one file of config/ (`pools` is config/pools.yaml, ...). Rules that
span files raise `ConfigError` with the absolute location, so the loader can name file and field.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from functools import cached_property
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

Loc = tuple[str | int, ...]

ROLE_PREFIX = "node-role.kubernetes.io/"
CONTROL_PLANE_ROLE = "control-plane"
INFRA_ROLE = "infra"  # the pool that hosts cluster services; its cluster is the Argo CD hub
RETENTION_FILL = 0.85  # share of a Prometheus volume its blocks may fill
# Components the generator renders today; a missing pin is a config error, not a KeyError at synth.
REQUIRED_IMAGES = {
    "aistor-server": "the ObjectStore",
    "aistor-server-rdma": "the ObjectStore with storage.aistor.rdma on",
    "kube-vip": "the API VIP static pod",
    "nvidia-driver": "the GPU Operator's driver",
    "nvidia-pytorch": "the NCCL all-reduce benchmark",
    "network-operator-multus-cni": "the NicClusterPolicy",
    "network-operator-plugins": "the NicClusterPolicy",
    "network-operator-ipoib-cni": "the NicClusterPolicy",
    "network-operator-nvidia-k8s-ipam": "the NicClusterPolicy",
    "network-operator-k8s-rdma-shared-dev-plugin": "the NicNodePolicies",
    "network-operator-doca-driver": "the NicNodePolicies with fabric.driver doca-container",
    "opentelemetry-collector": "the log collectors",
    "curl": "Harbor's proxy-cache projects",
    "vllm-openai": "the model servers",
    "vllm-router": "the vLLM router",
}
REQUIRED_CHARTS = {
    "external-secrets": "every credential",
    "aistor-operator": "the AIStor object store",
    "aistor-volumemanager": "the AIStor drives",
    "csi-isilon": "PowerScale volumes",
    "topolvm": "the local NVMe cache",
    "cert-manager": "certificates",
    "envoy-gateway": "the Gateway API implementation",
    "metrics-server": "resource metrics",
    "argo-cd": "Argo CD on the hub cluster",
    "cilium": "the primary CNI of every cluster",
    "node-feature-discovery": "hardware labels on GPU and fabric nodes",
    "gpu-operator": "the GPU pool",
    "network-operator": "the NDR rails",
    "kueue": "GPU job queueing",
    "kube-prometheus-stack": "metrics and alerts",
    "prometheus-smartctl-exporter": "NVMe wear metrics",
    "grafana": "dashboards",
    "loki": "logs",
    "opentelemetry-operator": "the OpenTelemetry operator",
    "opentelemetry-collector": "the log collectors",
    "harbor": "the registry",
    "vllm-stack": "the vLLM router",
}


class ConfigError(Exception):
    """One impossible or malformed value, located by (file section, field path...)."""

    def __init__(self, loc: Loc, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


# --- field types -------------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
EXACT_VERSION = re.compile(r"^v?\d+(\.\d+){1,3}([-+][0-9A-Za-z.+-]+)?$")
_IMAGE_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def _dns_label(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS label (lowercase letters, digits and '-', at most 63)")
    return value


def _dns_name(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(f"{value!r} is not a DNS name")
    return value


def _label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise ValueError(f"label key {key!r}: prefix {prefix!r} is not a DNS subdomain")
    if not _LABEL_NAME.match(name):
        raise ValueError(
            f"label key {key!r}: name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    return key


def _label_value(value: str) -> str:
    if value and not _LABEL_NAME.match(value):
        raise ValueError(
            f"label value {value!r} must be empty or 1-63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    return value


def _exact_version(value: str) -> str:
    if not EXACT_VERSION.match(value):
        raise ValueError(f"{value!r} is not an exact version (ranges, 'latest' and empty are refused)")
    return value


def _image_tag(value: str) -> str:
    if value == "latest" or not _IMAGE_TAG.match(value):
        raise ValueError(f"{value!r} is not a pinned image tag ('latest' and empty are refused)")
    return value


def _text(value: object) -> object:
    # pydantic would take an integer (or `true`) as an address; in config that is always a mistake.
    if not isinstance(value, str):
        raise ValueError(f"expected an address or CIDR as text, got {type(value).__name__}")
    return value


Cidr = Annotated[ipaddress.IPv4Network, BeforeValidator(_text)]
Address = Annotated[ipaddress.IPv4Address, BeforeValidator(_text)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
BucketName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
ExactVersion = Annotated[str, AfterValidator(_exact_version)]
ImageTag = Annotated[str, AfterValidator(_image_tag)]
RailName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,8}$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- hardware.yaml -----------------------------------------------------------------------------


class Nvme(Strict):
    drives: PositiveInt
    drive_gb: PositiveInt
    generation: str | None = None

    @property
    def total_gb(self) -> int:
        return self.drives * self.drive_gb


class Gpu(Strict):
    model: DnsLabel
    count: PositiveInt
    hbm_gb: PositiveInt


class Hardware(Strict):
    vendor: str
    model: str
    cpu_cores: PositiveInt
    memory_gb: PositiveInt
    nvme: Nvme
    ethernet_100g_ports: PositiveInt
    ndr400_ports: NonNegativeInt = 0
    gpu: Gpu | None = None


# --- pools.yaml --------------------------------------------------------------------------------


class Taint(Strict):
    key: LabelKey
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def toleration(self) -> dict[str, str]:
        if self.value is None:
            return {"key": self.key, "operator": "Exists", "effect": self.effect}
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


class Host(Strict):
    name: DnsLabel
    address: Address


class Pool(Strict):
    description: str
    hardware: str
    count: PositiveInt
    labels: dict[LabelKey, LabelValue]
    taints: list[Taint] = []
    hosts: list[Host]

    @field_validator("labels")
    @classmethod
    def _one_role(cls, labels: dict[str, str]) -> dict[str, str]:
        roles = sorted(k for k in labels if k.startswith(ROLE_PREFIX))
        if len(roles) != 1:
            raise ValueError(f"needs exactly one '{ROLE_PREFIX}<role>' label, found {roles or 'none'}")
        return labels

    @field_validator("hosts")
    @classmethod
    def _count_matches(cls, hosts: list[Host], info: ValidationInfo) -> list[Host]:
        count = info.data.get("count")
        if count is not None and len(hosts) != count:
            raise ValueError(f"{len(hosts)} hosts listed but count is {count}")
        return hosts

    @property
    def role(self) -> str:
        return next(k for k in self.labels if k.startswith(ROLE_PREFIX)).removeprefix(ROLE_PREFIX)

    @property
    def role_label(self) -> tuple[str, str]:
        key = ROLE_PREFIX + self.role
        return key, self.labels[key]


# --- network.yaml ------------------------------------------------------------------------------


class Plane(Strict):
    vlan: Annotated[int, Field(ge=1, le=4094)]
    cidr: Cidr


class KubernetesPlane(Plane):
    interface: str
    link_gbps: PositiveInt
    mtu: Annotated[int, Field(ge=1280, le=9216)]


class Management(Strict):
    bmc: Plane
    os: Plane


class Rail(Strict):
    cidr: Cidr


class Nic(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,15}$")]  # RDMA device, as NCCL_IB_HCA names it
    netdev: Annotated[str, Field(pattern=r"^[a-z0-9_.-]{1,15}$")]  # its IPoIB interface
    rail: RailName
    gpus: list[NonNegativeInt] = []


class Network(Strict):
    management: Management
    kubernetes: KubernetesPlane


# --- fabric.yaml -------------------------------------------------------------------------------


class Fabric(Strict):
    link_gbps: PositiveInt
    driver: Literal["inbox", "doca-container"] = "inbox"
    rails: dict[RailName, Rail] = Field(min_length=1)
    nics: dict[str, list[Nic]]

    def rails_of(self, pool: str) -> list[str]:
        """The rails a pool's NICs sit on, in rail order."""
        used = {nic.rail for nic in self.nics.get(pool, [])}
        return [rail for rail in self.rails if rail in used]


# --- clusters.yaml -----------------------------------------------------------------------------


class ApiEndpoint(Strict):
    dns_name: DnsName
    vip: Address
    port: Annotated[int, Field(ge=1, le=65535)] = 6443

    @property
    def endpoint(self) -> str:
        return f"{self.dns_name}:{self.port}"


class Cluster(Strict):
    id: Annotated[int, Field(ge=1, le=255)]
    api: ApiEndpoint
    pod_cidr: Cidr
    service_cidr: Cidr
    load_balancer_cidr: Cidr
    dns_domain: DnsName = "cluster.local"
    etcd_quota_gib: Annotated[int, Field(ge=2, le=8)] = 8


# --- variants.yaml -----------------------------------------------------------------------------


class CarvedControlPlane(Strict):
    from_pool: str
    hosts: list[DnsLabel] = Field(min_length=1)


class VariantCluster(Strict):
    pools: list[str] = Field(min_length=1)
    control_plane: CarvedControlPlane | None = None


class Variant(Strict):
    description: str
    clusters: dict[DnsLabel, VariantCluster] = Field(min_length=1)


# --- storage.yaml ------------------------------------------------------------------------------


class PowerScaleClass(Strict):
    path: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")]  # below base_path
    root_squash: bool = True
    reclaim: Literal["Retain", "Delete"] = "Retain"
    description: str


class PowerScale(Strict):
    model: str
    nodes: PositiveInt
    drives_per_node: PositiveInt
    drive_gb: PositiveInt
    cluster_name: DnsLabel
    endpoint: Annotated[str, Field(pattern=r"^https://\S+$")]
    smartconnect: DnsName
    access_zone: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")]
    base_path: Annotated[str, Field(pattern=r"^/ifs(/[A-Za-z0-9_.-]+)*$")]
    nfs_version: Literal["3", "4", "4.1", "4.2"]
    mount_pools: list[str] = Field(min_length=1)
    classes: dict[DnsLabel, PowerScaleClass] = Field(min_length=1)

    @property
    def raw_gb(self) -> int:
        return self.nodes * self.drives_per_node * self.drive_gb


class AIStorTier(Strict):
    pool: str
    set_drive_count: Literal["auto"] | Annotated[int, Field(ge=2, le=32)] = "auto"
    parity: Literal["default"] | Annotated[int, Field(ge=0, le=16)] = "default"
    rdma: bool = False
    s3_hostname: DnsName


class LocalCacheTier(Strict):
    pools: list[str] = Field(min_length=1)
    volume_group: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]{1,127}$")]


class Storage(Strict):
    powerscale: PowerScale
    aistor: AIStorTier
    local_cache: LocalCacheTier


# --- secrets.yaml ------------------------------------------------------------------------------


class VaultBackend(Strict):
    server: Annotated[str, Field(pattern=r"^https://\S+$")]
    path: str
    version: Literal["v1", "v2"] = "v2"
    auth_mount: str
    role: str


class Secrets(Strict):
    store: DnsLabel
    provider: Literal["vault"]
    vault: VaultBackend


# --- versions.yaml -----------------------------------------------------------------------------


class ChartPin(Strict):
    chart: str
    repo: Annotated[str, Field(pattern=r"^(https://|oci://)\S+$")]
    version: ExactVersion

    @property
    def is_oci(self) -> bool:
        return self.repo.startswith("oci://")

    @property
    def argo_repo(self) -> str:
        """The repoURL Argo CD takes: an OCI Helm registry without its scheme (registered with enableOCI)."""
        return self.repo.removeprefix("oci://")


class ImagePin(Strict):
    repository: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/-]*$")]
    tag: ImageTag

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"


class ManifestPin(Strict):
    url: Annotated[str, Field(pattern=r"^https://\S+$")]
    version: ExactVersion
    channel: str | None = None


class Versions(Strict):
    kubernetes: Annotated[str, Field(pattern=r"^v1\.\d+\.\d+$")]
    charts: dict[DnsLabel, ChartPin]
    images: dict[DnsLabel, ImagePin]
    manifests: dict[DnsLabel, ManifestPin] = {}


# --- gitops.yaml -------------------------------------------------------------------------------


class ArgoCD(Strict):
    namespace: DnsLabel = "argocd"
    hostname: DnsName


class GitOps(Strict):
    repo_url: Annotated[str, Field(pattern=r"^(https://|ssh://|git@)\S+$")]
    revision: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._/-]+$")]
    argocd: ArgoCD


# --- tenants.yaml ------------------------------------------------------------------------------


class Tenant(Strict):
    description: str
    nccl_benchmark: bool = False  # render the multi-node NCCL all-reduce benchmark job for this tenant


# --- services.yaml -----------------------------------------------------------------------------


class Acme(Strict):
    server: Annotated[str, Field(pattern=r"^https://\S+$")]
    email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+$")]


class Certificates(Strict):
    issuer: Literal["internal-ca", "acme"]
    acme: Acme | None = None


class GatewayConfig(Strict):
    address: Address


class Prometheus(Strict):
    replicas: Annotated[int, Field(ge=1, le=5)] = 2
    retention_days: Annotated[int, Field(ge=1)]
    volume_gb: Annotated[int, Field(ge=20)]  # per replica, on the system pool's local NVMe

    @property
    def retention_size(self) -> str:
        """Prometheus deletes old blocks at this size, before the volume fills (WAL and compaction
        need headroom)."""
        return f"{int(self.volume_gb * RETENTION_FILL)}GB"


class Monitoring(Strict):
    prometheus: Prometheus
    alertmanager_replicas: Annotated[int, Field(ge=1, le=5)] = 3
    grafana_hostname: DnsName
    # Where the agents of other clusters deliver to the hub, through the Gateway: metrics by Prometheus
    # remote write, logs by OTLP.
    telemetry_hostname: DnsName


class Logs(Strict):
    retention_days: Annotated[int, Field(ge=1)]
    bucket: BucketName  # the chunk and index bucket in AIStor
    ruler_bucket: BucketName
    volume_gb: Annotated[int, Field(ge=1)]  # per write/backend replica: WAL and compactor scratch


class ProxyCache(Strict):
    type: Literal["docker-hub", "docker-registry", "github-ghcr", "quay", "harbor"]
    url: Annotated[str, Field(pattern=r"^https://\S+$")]  # what Harbor's registry endpoint takes

    @property
    def registry(self) -> str:
        """The registry name images carry (Docker Hub's URL is its web site, its images say docker.io)."""
        return "docker.io" if self.type == "docker-hub" else urlparse(self.url).hostname or self.url

    @property
    def api(self) -> str:
        """Where a client pulls from without the cache."""
        return "https://registry-1.docker.io" if self.type == "docker-hub" else self.url


class Registry(Strict):
    hostname: DnsName
    storage: Literal["aistor", "powerscale"]
    bucket: BucketName  # with storage aistor
    powerscale_class: str = "archive"  # with storage powerscale: the class of the image volume
    volume_gb: Annotated[int, Field(ge=1)]  # registry volume with storage powerscale
    # Harbor projects that pull through to these registries: `<hostname>/<project>/<image>`.
    proxy_cache: dict[DnsLabel, ProxyCache] = Field(min_length=1)


class ServedModel(Strict):
    name: DnsLabel
    source: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$")]  # Hugging Face id
    replicas: Annotated[int, Field(ge=1)] = 1
    max_model_len: Annotated[int, Field(ge=1024)]
    cache_gb: Annotated[int, Field(ge=1)]  # weights cache on the node's local NVMe


class Serving(Strict):
    hostname: DnsName
    tenant: DnsLabel  # whose namespace and GPU quota the model servers use
    router_replicas: Annotated[int, Field(ge=1)] = 2
    routing: Literal["roundrobin", "session", "prefixaware", "kvaware"] = "roundrobin"
    models: list[ServedModel] = Field(min_length=1)


class Services(Strict):
    certificates: Certificates
    gateway: GatewayConfig
    monitoring: Monitoring
    logs: Logs
    registry: Registry
    serving: Serving


# --- dashboards/*.json -------------------------------------------------------------------------

# The data sources Grafana is provisioned with, by uid: every dashboard panel must name one of them.
DATASOURCE_UIDS = ("loki", "prometheus")


class Dashboard(BaseModel):
    """A Grafana dashboard: the fields the generator relies on are checked, the rest is Grafana's."""

    model_config = ConfigDict(extra="allow", frozen=True)
    uid: DnsLabel
    title: Annotated[str, Field(min_length=1)]
    panels: list[dict[str, Any]] = Field(min_length=1)


# --- the site ----------------------------------------------------------------------------------


class Site(Strict):
    hardware: dict[DnsLabel, Hardware] = Field(min_length=1)
    pools: dict[DnsLabel, Pool] = Field(min_length=1)
    network: Network
    fabric: Fabric
    clusters: dict[DnsLabel, Cluster] = Field(min_length=1)
    variants: dict[DnsLabel, Variant] = Field(min_length=1)
    storage: Storage
    versions: Versions
    gitops: GitOps
    tenants: dict[DnsLabel, Tenant] = {}
    secrets: Secrets
    services: Services
    dashboards: dict[DnsLabel, Dashboard] = {}

    @model_validator(mode="after")
    def _check(self) -> Site:
        # Order matters: later rules rely on references that earlier rules proved valid.
        self._check_pool_hardware()
        self._check_hosts()
        self._check_fabric()
        self._check_clusters()
        self._check_cidrs()
        self._check_variants()
        self._check_storage()
        self._check_versions()
        self._check_services()
        self._check_dashboards()
        return self

    def _check_dashboards(self) -> None:
        uids: dict[str, str] = {}
        for name, dashboard in self.dashboards.items():
            if dashboard.uid in uids:
                raise ConfigError(
                    ("dashboards", name, "uid"), f"uid {dashboard.uid!r} is also {uids[dashboard.uid]}'s"
                )
            uids[dashboard.uid] = name
            for i, panel in enumerate(dashboard.panels):
                sources = [((i, "datasource"), panel.get("datasource"))] + [
                    ((i, "targets", j, "datasource"), target.get("datasource"))
                    for j, target in enumerate(panel.get("targets") or [])
                    if isinstance(target, dict)
                ]
                for path, source in sources:
                    uid = source.get("uid") if isinstance(source, dict) else source
                    if uid is not None and uid not in DATASOURCE_UIDS:
                        raise ConfigError(
                            ("dashboards", name, "panels", *path),
                            f"data source {uid!r} is not provisioned (one of {', '.join(DATASOURCE_UIDS)})",
                        )

    def _check_services(self) -> None:
        certs = self.services.certificates
        if certs.issuer == "acme" and certs.acme is None:
            raise ConfigError(
                ("services", "certificates", "acme"), "issuer acme needs the acme server and email"
            )
        address = self.services.gateway.address
        if not any(address in c.load_balancer_cidr for c in self.clusters.values()):
            raise ConfigError(
                ("services", "gateway", "address"), f"{address} is in no cluster's load-balancer pool"
            )
        infra = next(n for n, p in self.pools.items() if p.role == INFRA_ROLE)
        if infra not in self.storage.local_cache.pools:
            raise ConfigError(
                ("storage", "local_cache", "pools"),
                f"must list {infra!r}: Prometheus, Alertmanager, Loki and Harbor keep their volumes there",
            )
        nvme_gb = self.hardware_of(infra).nvme.total_gb
        monitoring, logs = self.services.monitoring, self.services.logs
        if monitoring.prometheus.volume_gb + logs.volume_gb > nvme_gb:
            raise ConfigError(
                ("services", "monitoring", "prometheus", "volume_gb"),
                f"with logs.volume_gb it exceeds the {nvme_gb} GB of NVMe of an {infra} node",
            )
        serving = self.services.serving
        if serving.tenant not in self.tenants:
            raise ConfigError(("services", "serving", "tenant"), f"unknown tenant {serving.tenant!r}")
        if len({m.name for m in serving.models}) != len(serving.models):
            raise ConfigError(("services", "serving", "models"), "model names must be unique")
        registry = self.services.registry
        upstreams: dict[str, str] = {}
        for name, cache in registry.proxy_cache.items():
            if cache.registry in upstreams:
                raise ConfigError(
                    ("services", "registry", "proxy_cache", name, "url"),
                    f"{cache.registry} is already cached by {upstreams[cache.registry]!r} (one containerd mirror per registry)",
                )
            upstreams[cache.registry] = name
        if (
            registry.storage == "powerscale"
            and registry.powerscale_class not in self.storage.powerscale.classes
        ):
            raise ConfigError(
                ("services", "registry", "powerscale_class"),
                f"unknown PowerScale class {registry.powerscale_class!r}",
            )

    def _check_pool_hardware(self) -> None:
        for name, pool in self.pools.items():
            if pool.hardware not in self.hardware:
                raise ConfigError(
                    ("pools", name, "hardware"),
                    f"unknown hardware model {pool.hardware!r} (known: {', '.join(sorted(self.hardware))})",
                )
        roles = Counter(pool.role for pool in self.pools.values())
        for name, pool in self.pools.items():
            if roles[pool.role] > 1:
                raise ConfigError(
                    ("pools", name, "labels"), f"role {pool.role!r} is claimed by more than one pool"
                )
        if roles[CONTROL_PLANE_ROLE] != 1:
            raise ConfigError(("pools",), f"exactly one pool must carry the role {CONTROL_PLANE_ROLE!r}")
        if roles[INFRA_ROLE] != 1:
            raise ConfigError(
                ("pools",), f"exactly one pool must carry the role {INFRA_ROLE!r} (cluster services)"
            )

    def _check_hosts(self) -> None:
        plane = self.network.kubernetes.cidr
        names: dict[str, Loc] = {}
        addresses: dict[ipaddress.IPv4Address, Loc] = {}
        for pool_name, pool in self.pools.items():
            for i, host in enumerate(pool.hosts):
                loc = ("pools", pool_name, "hosts", i)
                if host.name in names:
                    raise ConfigError(
                        (*loc, "name"), f"duplicate host {host.name!r} (also at {dotted(names[host.name])})"
                    )
                names[host.name] = (*loc, "name")
                if host.address in addresses:
                    raise ConfigError(
                        (*loc, "address"),
                        f"duplicate address {host.address} (also at {dotted(addresses[host.address])})",
                    )
                addresses[host.address] = (*loc, "address")
                if host.address not in plane:
                    raise ConfigError(
                        (*loc, "address"), f"{host.address} is outside the Kubernetes plane {plane}"
                    )

    def _check_fabric(self) -> None:
        fabric = self.fabric
        for pool_name, nics in fabric.nics.items():
            loc: Loc = ("fabric", "nics", pool_name)
            if pool_name not in self.pools:
                raise ConfigError(loc, f"unknown pool {pool_name!r}")
            hw = self.hardware[self.pools[pool_name].hardware]
            if len(nics) != hw.ndr400_ports:
                raise ConfigError(
                    loc, f"{len(nics)} NICs mapped but {self.pools[pool_name].hardware} has {hw.ndr400_ports}"
                )
            seen_gpu: dict[int, str] = {}
            seen_nic: set[str] = set()
            seen_rail: set[str] = set()
            for i, nic in enumerate(nics):
                if nic.rail in seen_rail:
                    raise ConfigError(
                        (*loc, i, "rail"),
                        f"a second NIC on rail {nic.rail}: rail-optimised means one NIC per rail",
                    )
                seen_rail.add(nic.rail)
                if nic.name in seen_nic:
                    raise ConfigError((*loc, i, "name"), f"duplicate NIC {nic.name!r}")
                seen_nic.add(nic.name)
                if nic.rail not in fabric.rails:
                    raise ConfigError(
                        (*loc, i, "rail"),
                        f"NIC {nic.name} is on undefined rail {nic.rail!r} (rails: {', '.join(fabric.rails)})",
                    )
                if nic.gpus and hw.gpu is None:
                    raise ConfigError((*loc, i, "gpus"), f"pool {pool_name} has no GPUs to map")
                for gpu in nic.gpus:
                    if hw.gpu is not None and gpu >= hw.gpu.count:
                        raise ConfigError(
                            (*loc, i, "gpus"), f"GPU {gpu} does not exist (the node has {hw.gpu.count})"
                        )
                    if gpu in seen_gpu:
                        raise ConfigError(
                            (*loc, i, "gpus"),
                            f"GPU {gpu} is mapped to two NICs ({seen_gpu[gpu]}, {nic.name})",
                        )
                    seen_gpu[gpu] = nic.name
            if hw.gpu is not None:
                unmapped = sorted(set(range(hw.gpu.count)) - set(seen_gpu))
                if unmapped:
                    raise ConfigError(loc, f"GPUs {unmapped} are mapped to no NIC")
        netdevs: dict[str, tuple[str, Loc]] = {}
        for pool_name, nics in fabric.nics.items():
            for i, nic in enumerate(nics):
                loc = ("fabric", "nics", pool_name, i, "netdev")
                seen = netdevs.setdefault(nic.rail, (nic.netdev, loc))
                if seen[0] != nic.netdev:
                    raise ConfigError(
                        loc,
                        f"rail {nic.rail} is {seen[0]} at {dotted(seen[1])}; one rail needs one interface name "
                        "(it is the IPoIB master of the rail's network)",
                    )
        for pool_name, pool in self.pools.items():
            if self.hardware[pool.hardware].ndr400_ports and pool_name not in fabric.nics:
                raise ConfigError(
                    ("fabric", "nics"), f"pool {pool_name} has NDR ports but no NIC-to-rail map"
                )

    def _check_clusters(self) -> None:
        plane = self.network.kubernetes.cidr
        hosts = {h.address: h.name for p in self.pools.values() for h in p.hosts}
        ids: dict[int, str] = {}
        vips: dict[ipaddress.IPv4Address, str] = {}
        dns_names: dict[str, str] = {}
        for name, cluster in self.clusters.items():
            vip, vip_loc = cluster.api.vip, ("clusters", name, "api", "vip")
            if cluster.id in ids:
                raise ConfigError(
                    ("clusters", name, "id"), f"id {cluster.id} is also used by {ids[cluster.id]}"
                )
            ids[cluster.id] = name
            if vip in vips:
                raise ConfigError(vip_loc, f"{vip} is also the API VIP of {vips[vip]}")
            vips[vip] = name
            if cluster.api.dns_name in dns_names:
                raise ConfigError(
                    ("clusters", name, "api", "dns_name"),
                    f"{cluster.api.dns_name} is also the API name of {dns_names[cluster.api.dns_name]}",
                )
            dns_names[cluster.api.dns_name] = name
            if vip not in plane:
                raise ConfigError(vip_loc, f"{vip} must lie inside the Kubernetes plane {plane}")
            if vip in hosts:
                raise ConfigError(vip_loc, f"{vip} is the address of host {hosts[vip]}")
            for other, other_cluster in self.clusters.items():
                if vip in other_cluster.load_balancer_cidr:
                    raise ConfigError(vip_loc, f"{vip} lies inside the load-balancer pool of {other}")
            lb_loc = ("clusters", name, "load_balancer_cidr")
            if not cluster.load_balancer_cidr.subnet_of(plane):
                raise ConfigError(
                    lb_loc, f"{cluster.load_balancer_cidr} must lie inside the Kubernetes plane {plane}"
                )
            for address, host in hosts.items():
                if address in cluster.load_balancer_cidr:
                    raise ConfigError(lb_loc, f"contains the address of host {host}")

    def _check_cidrs(self) -> None:
        """Every routed range is disjoint; load-balancer pools live inside the Kubernetes plane on purpose."""
        ranges: list[tuple[Loc, ipaddress.IPv4Network]] = [
            (("network", "management", "bmc", "cidr"), self.network.management.bmc.cidr),
            (("network", "management", "os", "cidr"), self.network.management.os.cidr),
            (("network", "kubernetes", "cidr"), self.network.kubernetes.cidr),
        ]
        ranges += [(("fabric", "rails", n, "cidr"), r.cidr) for n, r in self.fabric.rails.items()]
        for name, cluster in self.clusters.items():
            ranges += [
                (("clusters", name, "pod_cidr"), cluster.pod_cidr),
                (("clusters", name, "service_cidr"), cluster.service_cidr),
            ]
        lb_pools = [
            (("clusters", n, "load_balancer_cidr"), c.load_balancer_cidr) for n, c in self.clusters.items()
        ]
        for group in (ranges, lb_pools):
            for i, (loc, net) in enumerate(group):
                for other_loc, other in group[:i]:
                    if net.overlaps(other):
                        raise ConfigError(loc, f"{net} overlaps {other} ({dotted(other_loc)})")

    def _check_variants(self) -> None:
        for vname, variant in self.variants.items():
            owner: dict[str, str] = {}
            for cname, vc in variant.clusters.items():
                loc: Loc = ("variants", vname, "clusters", cname)
                if cname not in self.clusters:
                    raise ConfigError(
                        loc, f"unknown cluster {cname!r} (clusters.yaml has {', '.join(self.clusters)})"
                    )
                for i, pool in enumerate(vc.pools):
                    if pool not in self.pools:
                        raise ConfigError((*loc, "pools", i), f"unknown pool {pool!r}")
                    if pool in owner:
                        raise ConfigError(
                            (*loc, "pools", i), f"pool {pool!r} is already in cluster {owner[pool]!r}"
                        )
                    owner[pool] = cname
            for pool in self.pools:
                if pool not in owner:
                    raise ConfigError(("variants", vname), f"pool {pool!r} is in no cluster")
            for cname, vc in variant.clusters.items():
                self._check_control_plane(vname, cname, vc, owner)

    def _check_control_plane(self, vname: str, cname: str, vc: VariantCluster, owner: dict[str, str]) -> None:
        loc: Loc = ("variants", vname, "clusters", cname)
        has_cp_pool = any(self.pools[p].role == CONTROL_PLANE_ROLE for p in vc.pools)
        carve = vc.control_plane
        if has_cp_pool == (carve is not None):
            raise ConfigError(
                loc, "needs exactly one control plane: the control-plane pool or a `control_plane` carve-out"
            )
        if carve is None:
            return
        cloc = (*loc, "control_plane")
        if carve.from_pool not in self.pools:
            raise ConfigError((*cloc, "from_pool"), f"unknown pool {carve.from_pool!r}")
        if self.pools[carve.from_pool].taints:
            raise ConfigError((*cloc, "from_pool"), f"pool {carve.from_pool!r} is tainted for a purpose")
        available = {h.name for h in self.pools[carve.from_pool].hosts}
        for i, host in enumerate(carve.hosts):
            if host not in available:
                raise ConfigError((*cloc, "hosts", i), f"host {host!r} is not in pool {carve.from_pool!r}")
        if len(set(carve.hosts)) != len(carve.hosts):
            raise ConfigError((*cloc, "hosts"), "lists a host twice")
        if len(carve.hosts) % 2 == 0:
            raise ConfigError(
                (*cloc, "hosts"), f"{len(carve.hosts)} hosts: stacked etcd needs an odd member count"
            )
        if len(carve.hosts) >= len(available):
            raise ConfigError((*cloc, "hosts"), f"would leave pool {carve.from_pool!r} empty")

    def _check_storage(self) -> None:
        aistor = self.storage.aistor
        if aistor.pool not in self.pools:
            raise ConfigError(("storage", "aistor", "pool"), f"unknown pool {aistor.pool!r}")
        drives = self.hardware_of(aistor.pool).nvme.drives * self.pools[aistor.pool].count
        if aistor.set_drive_count == "auto":
            from sitegen.erasure import symmetric_set_sizes

            if not symmetric_set_sizes(self.pools[aistor.pool].count, drives):
                raise ConfigError(
                    ("storage", "aistor", "set_drive_count"),
                    f"{self.pools[aistor.pool].count} servers admit no symmetric erasure set of 2-16 drives: set it",
                )
        if isinstance(aistor.set_drive_count, int) and drives % aistor.set_drive_count:
            raise ConfigError(
                ("storage", "aistor", "set_drive_count"),
                f"{drives} drives do not divide into sets of {aistor.set_drive_count}",
            )
        for i, pool in enumerate(self.storage.local_cache.pools):
            if pool not in self.pools:
                raise ConfigError(("storage", "local_cache", "pools", i), f"unknown pool {pool!r}")
        mounts = self.storage.powerscale.mount_pools
        for i, pool in enumerate(mounts):
            if pool not in self.pools:
                raise ConfigError(("storage", "powerscale", "mount_pools", i), f"unknown pool {pool!r}")
        for name, pool in self.pools.items():
            if not pool.taints and name not in mounts:
                raise ConfigError(
                    ("storage", "powerscale", "mount_pools"),
                    f"untainted pool {name!r} gets the CSI node plugin anyway (it is placed by taint only): list it",
                )

    def _check_versions(self) -> None:
        for name, needed_by in REQUIRED_IMAGES.items():
            if name not in self.versions.images:
                raise ConfigError(("versions", "images", name), f"missing pin (needed by {needed_by})")
        for name, needed_by in REQUIRED_CHARTS.items():
            if name not in self.versions.charts:
                raise ConfigError(("versions", "charts", name), f"missing pin (needed by {needed_by})")

    # --- derived views -------------------------------------------------------------------------

    def hardware_of(self, pool: str) -> Hardware:
        return self.hardware[self.pools[pool].hardware]

    def node_labels(self, pool: str) -> dict[str, str]:
        """The pool's labels plus those that follow from its hardware, sorted for stable output."""
        labels = dict(self.pools[pool].labels)
        gpu = self.hardware_of(pool).gpu
        if gpu is not None:
            labels["gpu-count"] = str(gpu.count)
        return dict(sorted(labels.items()))

    @cached_property
    def control_plane_pool(self) -> str:
        return next(n for n, p in self.pools.items() if p.role == CONTROL_PLANE_ROLE)

    @property
    def default_variant(self) -> str:
        return next(iter(self.variants))


def dotted(loc: Loc) -> str:
    """('pools', 'gpu', 'hosts', 3, 'name') -> 'pools.gpu.hosts[3].name'"""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for "the key itself is invalid"
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _PLAIN_KEY.match(part):
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else part
    return out


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./-]+$")
