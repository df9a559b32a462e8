"""PostgreSQL for the site's own services: `cloudnative-pg`, the operator that runs each database as
instances on several nodes with streaming replication and fails over by itself, and `barman-cloud`,
its plugin that archives every WAL segment and takes base backups to object storage (the operator's
in-tree Barman Cloud support is deprecated since 1.26 and goes in 1.31). Both on the hub's system
pool, where the databases' consumers run; the databases themselves belong to their consumers
(registry/harbor_database.py)."""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.flows import Flow
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import (
    MAKES_PRIVILEGED_PODS,
    PATCHES_PRIVILEGED_PODS,
    READS_SECRETS,
    REWRITES_ADMISSION,
    Reviewed,
    RoleReview,
)
from sitegen.components.storage import PROJECT
from sitegen.components.values import Image, Placed, Resources, Values, image, placed, requests

NAMESPACE = "cnpg-system"  # the plugin must run in the operator's namespace
INSTANCE_STATUS_PORT = 8000  # each instance's status endpoint, which the operator polls
PLUGIN_PORT = 9090  # the plugin's gRPC service (mutual TLS, cert-manager's certificates)


class Monitoring(Values):
    podMonitorEnabled: bool = False  # the observability app's, once the stack serves the kind


class Config(Values):
    clusterWide: bool = True


class CloudNativePgValues(Placed):
    replicaCount: int
    image: Image
    resources: Resources
    monitoring: Monitoring = Monitoring()
    config: Config = Config()


class CloudNativePg(ChartComponent):
    name = "cloudnative-pg"
    chart = "cloudnative-pg"
    api = "postgresql.cnpg.io/v1"  # of the Cluster, Backup and ScheduledBackup kinds
    serves = (api,)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = NAMESPACE
    security = NamespaceSecurity(
        "restricted", "the operator and its plugin run as non-root, every capability dropped"
    )
    images = {"cloudnative-pg": "the operator, and the instance manager it copies into every PostgreSQL pod"}

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub  # Harbor's database runs there

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        # the instances of every database, in the namespaces of the components that come after the
        # operator (their Clusters): it polls each instance's status endpoint
        return [
            Flow(
                c.namespace,
                (INSTANCE_STATUS_PORT,),
                "each PostgreSQL instance's status (the operator's polls)",
            )
            for c in ctx.components
            if type(self) in c.after
        ]

    def values(self, ctx: ClusterContext) -> CloudNativePgValues:
        return CloudNativePgValues(
            # one at a time: the operator elects a leader, a second replica only waits
            replicaCount=1,
            image=image(ctx.image("cloudnative-pg")),
            resources=requests("100m", "256Mi", "1Gi"),
            **placed(ctx.system_placement),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "cloudnative-pg": RoleReview(
                (READS_SECRETS,),
                "CloudNativePG writes and reads each database's credentials and certificates in its namespace (the chart binds its ClusterRole cluster-wide: clusterWide)",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/cloudnative-pg": Reviewed(
                (READS_SECRETS, MAKES_PRIVILEGED_PODS, PATCHES_PRIVILEGED_PODS, REWRITES_ADMISSION),
                "the operator makes each Cluster's pods and Secrets in the Cluster's namespace and patches its own webhook configurations' CA bundle; the chart binds it cluster-wide",
            ),
        }


class PluginImage(Values):
    registry: str
    repository: str
    tag: str


def _plugin_image(repository: str, tag: str) -> PluginImage:
    registry, _, path = repository.partition("/")
    return PluginImage(registry=registry, repository=path, tag=tag)


class BarmanCloudValues(Placed):
    image: PluginImage
    sidecarImage: PluginImage
    resources: Resources


class BarmanCloud(ChartComponent):
    name = "barman-cloud"
    chart = "plugin-barman-cloud"
    plugin = "barman-cloud.cloudnative-pg.io"  # the plugin's name, as a Cluster names it
    serves = ("barmancloud.cnpg.io/v1",)
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (CloudNativePg, CertManager)  # its gRPC certificates are cert-manager's
    namespace = NAMESPACE
    images = {
        "barman-cloud": "the plugin the operator calls",
        "barman-cloud-sidecar": "the sidecar it injects into each PostgreSQL pod, which archives",
    }

    def reloads_certificates(self, scope: ClusterScope) -> Mapping[str, str]:
        return {
            self.object_key("Deployment", "barman-cloud-plugin-barman-cloud"): "reads its pair and the "
            "client's certificate for each connection (cnpg-i-machinery v0.4.2 getConfigForClient); the "
            "operator re-registers the plugin when either Secret changes (CNPG 1.30 plugin_controller)"
        }

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return CloudNativePg.applies(scope)

    def values(self, ctx: ClusterContext) -> BarmanCloudValues:
        plugin, sidecar = ctx.image("barman-cloud"), ctx.image("barman-cloud-sidecar")
        return BarmanCloudValues(
            image=_plugin_image(plugin.repository, plugin.pinned_tag),
            sidecarImage=_plugin_image(sidecar.repository, sidecar.pinned_tag),
            resources=requests("50m", "128Mi", "512Mi"),
            **placed(ctx.system_placement),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "barman-cloud-plugin-barman-cloud": RoleReview(
                (READS_SECRETS,),
                "the Barman Cloud plugin reads the S3 keys and CA each ObjectStore names, in its database's namespace",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/barman-cloud-plugin-barman-cloud": Reviewed(
                (READS_SECRETS,),
                "reads each Cluster's object-store credentials from the Cluster's namespace; the chart binds it cluster-wide",
            ),
        }
