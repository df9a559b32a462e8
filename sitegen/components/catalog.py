"""The component registry: every component of the generator, one line each, in a stable order.

Apps per cluster, sync order, AppProjects, required pins, policy allow-lists and the runbook's lists
are all derived from this list; adding a component is one module and one line here.
"""

from __future__ import annotations

from sitegen.components.base import Component
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.edge.envoy_gateway import EnvoyGateway
from sitegen.components.edge.gateway import Gateway, GatewayRoutes
from sitegen.components.extensions.extra_app import ExtraApp
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.components.gpu.gpu_node_guard import GpuNodeGuard
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.components.gpu.gpu_queues import GpuQueues
from sitegen.components.gpu.kueue import Kueue
from sitegen.components.hardware.node_feature_discovery import (
    NodeFeatureDiscovery,
    NodeFeatureDiscoveryWorker,
)
from sitegen.components.networking.cilium import Cilium
from sitegen.components.networking.cilium_lb import CiliumLb
from sitegen.components.networking.fabric import Fabric
from sitegen.components.networking.network_operator import NetworkOperator
from sitegen.components.networking.network_policies import NetworkPolicies
from sitegen.components.observability.grafana import Grafana
from sitegen.components.observability.grafana_database import GrafanaDatabase
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.observability.loki import Loki
from sitegen.components.observability.observability import Observability
from sitegen.components.observability.opentelemetry_operator import OpentelemetryOperator
from sitegen.components.observability.otel_gateway import OtelGateway
from sitegen.components.observability.otel_node import OtelNode
from sitegen.components.observability.prometheus_smartctl_exporter import PrometheusSmartctlExporter
from sitegen.components.platform.admission_policies import AdmissionPolicies
from sitegen.components.platform.argo_cd import ArgoCd
from sitegen.components.platform.argocd_manager import ArgocdManager
from sitegen.components.platform.coredns import CoreDns
from sitegen.components.platform.external_secrets import ExternalSecrets
from sitegen.components.platform.metrics_server import MetricsServer
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes.etcd_backup import EtcdBackup
from sitegen.components.platform_nodes.kubelet_csr_approver import KubeletCsrApprover
from sitegen.components.platform_nodes.node_labels import NodeLabels
from sitegen.components.registry.harbor import Harbor
from sitegen.components.registry.harbor_config import HarborConfig
from sitegen.components.registry.harbor_database import HarborDatabase
from sitegen.components.serving.models import Models
from sitegen.components.serving.vllm_stack import VllmStack
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.aistor_operator import AIStorOperator
from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager
from sitegen.components.storage.csi_isilon import CsiIsilon, CsiIsilonNode
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.storage.postgres import BarmanCloud, CloudNativePg
from sitegen.components.storage.powerscale import PowerScale
from sitegen.components.storage.snapshot_controller import SnapshotController
from sitegen.components.storage.topolvm import TopoLvm, TopoLvmNode
from sitegen.components.storage.velero import Velero
from sitegen.components.storage.velero_config import VeleroConfig
from sitegen.components.tenants.tenant import Tenant

COMPONENTS: tuple[type[Component], ...] = (
    # platform
    NodeLabels,
    KubeletCsrApprover,
    EtcdBackup,
    Namespaces,
    AdmissionPolicies,
    ArgoCd,
    ArgocdManager,
    ExternalSecrets,
    SecretStore,
    MetricsServer,
    CoreDns,
    # networking and hardware
    Cilium,
    CiliumLb,
    NetworkPolicies,
    NodeFeatureDiscovery,
    NodeFeatureDiscoveryWorker,
    NetworkOperator,
    Fabric,
    # gpu
    GpuOperator,
    Kueue,
    GpuQueues,
    GpuHealth,
    GpuNodeGuard,
    # storage
    AIStorVolumeManager,
    AIStorOperator,
    AIStor,
    CsiIsilon,
    CsiIsilonNode,
    SnapshotController,
    PowerScale,
    TopoLvm,
    TopoLvmNode,
    LocalNvme,
    Velero,
    VeleroConfig,
    CloudNativePg,
    BarmanCloud,
    # edge
    CertManager,
    EnvoyGateway,
    Gateway,
    GatewayRoutes,
    # observability
    KubePrometheusStack,
    PrometheusSmartctlExporter,
    OtelNode,
    OpentelemetryOperator,
    Loki,
    OtelGateway,
    GrafanaDatabase,
    Grafana,
    Observability,
    # registry and serving
    HarborDatabase,
    Harbor,
    HarborConfig,
    VllmStack,
    Models,
    # tenants
    Tenant,
    # config/extensions.yaml
    ExtraApp,
)
