"""The site model: the typed form of config/, one module per config file, validated once.

Bottom layer of the generator: it imports nothing of the project. `load_site` reads config/ (with its
overlays) and names the file and field of any fault; `resolve` turns a variant into clusters and pools.
"""

from sitegen.model.clusters import ApiEndpoint, Cluster
from sitegen.model.dashboards import DATASOURCE_UIDS, Dashboard
from sitegen.model.erasure import ErasureLayout, symmetric_set_sizes
from sitegen.model.fabric import Fabric, Nic, Rail
from sitegen.model.fields import EXACT_VERSION, ConfigError, dotted
from sitegen.model.gitops import GitOps
from sitegen.model.hardware import Gpu, Hardware, Nvme
from sitegen.model.layout import IN_CLUSTER, ClusterLayout, Placement, PoolLayout, VariantLayout, resolve
from sitegen.model.loader import ConfigFault, load_site
from sitegen.model.network import Network
from sitegen.model.pools import CONTROL_PLANE_ROLE, INFRA_ROLE, ROLE_PREFIX, Host, Pool, Taint
from sitegen.model.secrets import Secrets
from sitegen.model.services import (
    Certificates,
    Logs,
    Monitoring,
    ProxyCache,
    Registry,
    ServedModel,
    Services,
    Serving,
)
from sitegen.model.site import Site
from sitegen.model.storage import AIStorTier, LocalCacheTier, PowerScale, Storage
from sitegen.model.tenants import Tenant
from sitegen.model.versions import ChartPin, ImagePin, PinNeeds, Versions

__all__ = [
    "CONTROL_PLANE_ROLE",
    "DATASOURCE_UIDS",
    "EXACT_VERSION",
    "INFRA_ROLE",
    "IN_CLUSTER",
    "ROLE_PREFIX",
    "AIStorTier",
    "ApiEndpoint",
    "Certificates",
    "ChartPin",
    "Cluster",
    "ClusterLayout",
    "ConfigError",
    "ConfigFault",
    "Dashboard",
    "ErasureLayout",
    "Fabric",
    "GitOps",
    "Gpu",
    "Hardware",
    "Host",
    "ImagePin",
    "LocalCacheTier",
    "Logs",
    "Monitoring",
    "Network",
    "Nic",
    "Nvme",
    "PinNeeds",
    "Placement",
    "Pool",
    "PoolLayout",
    "PowerScale",
    "ProxyCache",
    "Rail",
    "Registry",
    "Secrets",
    "ServedModel",
    "Services",
    "Serving",
    "Site",
    "Storage",
    "Taint",
    "Tenant",
    "VariantLayout",
    "Versions",
    "dotted",
    "load_site",
    "resolve",
    "symmetric_set_sizes",
]
