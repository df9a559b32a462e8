"""`aistor`: the AIStor ObjectStore on the storage pool, its licence and root credentials, and how
the hub's services reach its S3 API.

In-cluster when AIStor shares the consumer's cluster, else on the AIStor cluster's load-balancer
address under `storage.aistor.s3_hostname`; either way over TLS with the operator's certificate, whose
CA each consumer gets from the vault (`aistor/ca`) as the Secret `aistor-ca`.
"""

from __future__ import annotations

from ipaddress import summarize_address_range

from constructs import Construct
from constructs.aistor import OBJECT_STORE, ObjectStore, license_secret
from constructs.argocd import application_name
from constructs.s3_front_doors import FRONT_PORT, S3FrontDoors, front_door_addresses
from constructs.site_watches import ErasureWatch, Watch
from sitegen.components.base import Layer, NamespaceSecurity, RenderedComponent, State, VaultSecretSpec
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow, RemoteAccess
from sitegen.components.operator_steps import OperatorStep, Stage
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.s3 import S3Endpoint
from sitegen.components.storage import PROJECT
from sitegen.components.storage.aistor_operator import AIStorOperator
from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager
from sitegen.model import ClusterLayout, Site

S3_SERVICE = "minio"  # the operator's S3 Service of an ObjectStore
REGION = "us-east-1"  # AIStor's default region; S3 clients sign requests with it
CA_SECRET = "aistor-ca"  # the AIStor CA, in each consumer's namespace


def ca_vault_secret(namespace: str, name: str = CA_SECRET) -> VaultSecretSpec:
    """The AIStor CA as a Secret (`aistor-ca`, or `name` beside another's) in a consumer's namespace."""
    return VaultSecretSpec(name, namespace, "aistor/ca", ("ca.crt",))


def ca_secret(scope: Construct, *, namespace: str, store: str, name: str = CA_SECRET) -> None:
    ca_vault_secret(namespace, name).render(scope, store)


# Healthy once the operator reports every server pool initialized: before that S3 does not answer, and
# the buckets and keys step (and every consumer after it) would run ahead. The fields are those of the
# MinIO operator's Tenant status, which the ObjectStore CRD keeps (currentState, healthStatus: green,
# yellow, red, and a state per pool). Red before initialization is a start, not a failure.
OBJECT_STORE_HEALTH = """hs = {status = "Progressing", message = "waiting for the AIStor operator"}
if obj.status == nil or obj.status.currentState == nil then
  return hs
end
if obj.status.currentState ~= "Initialized" then
  hs.message = obj.status.currentState
  return hs
end
for _, pool in ipairs(obj.status.pools or {}) do
  if pool.state ~= "PoolInitialized" then
    hs.message = "server pool " .. (pool.name or "?") .. ": " .. (pool.state or "no state")
    return hs
  end
end
if obj.status.healthStatus == "green" then
  hs.status = "Healthy"
  hs.message = "every server pool initialized"
elseif obj.status.healthStatus == "yellow" then
  hs.status = "Healthy"
  hs.message = obj.status.healthMessage or "serving with drives offline"
elseif obj.status.healthStatus == "red" then
  hs.status = "Degraded"
  hs.message = obj.status.healthMessage or "below write quorum"
end
return hs
"""


class AIStor(RenderedComponent):
    name = "aistor"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (AIStorOperator, AIStorVolumeManager, SecretStore)
    namespace = OBJECT_STORE
    skip_dry_run = True
    security = NamespaceSecurity(
        "baseline", "the ObjectStore's pods run restricted; the operator's sidecars are not verified"
    )
    images = {
        "aistor-server": "the ObjectStore",
        "aistor-server-rdma": "the ObjectStore with storage.aistor.rdma on",
    }

    exposed = True  # S3 for clients outside the cluster (the hub, in two clusters; hosts; the operator)

    @staticmethod
    def s3_endpoint(site: Site, consumer: ClusterLayout) -> S3Endpoint:
        """Where a cluster's consumers reach AIStor's S3: its Service where AIStor runs in that cluster,
        else `storage.aistor.s3_hostname` (the front doors' or the load balancer's address)."""
        if any(p.name == site.storage.aistor.pool for p in consumer.pools):
            return S3Endpoint(f"{S3_SERVICE}.{OBJECT_STORE}.svc.{consumer.spec.dns_domain}", REGION)
        return S3Endpoint(site.storage.aistor.s3_hostname, REGION)

    @staticmethod
    def front_door_hosts(scope: ClusterScope) -> list[str]:
        """The storage hosts that serve S3 on addresses of their own: in the cluster that runs AIStor,
        when another cluster of the variant consumes it (constructs/s3_front_doors.py)."""
        tier = scope.site.storage.aistor
        if tier.pool not in scope.pool_names or len(scope.variant.clusters) == 1:
            return []
        return [h.name for h in scope.cluster.pool(tier.pool).hosts]

    health_checks = {("aistor.min.io", "ObjectStore"): OBJECT_STORE_HEALTH}

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(AIStorOperator, (), "the servers' sidecar reads their configuration from the operator")]

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.site.storage.aistor.pool in scope.pool_names

    def remote_access(self, scope: ClusterScope) -> RemoteAccess | None:
        # its front doors: an address per storage host, a run at the top of the load-balancer range
        hosts = self.front_door_hosts(scope)
        if not hosts:
            return None
        addresses = front_door_addresses(scope.cluster.spec.load_balancer_cidr, hosts).values()
        blocks = summarize_address_range(min(addresses), max(addresses))
        return RemoteAccess(tuple(str(b) for b in blocks), (FRONT_PORT,))

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        """Its pool's drives handed to the volume manager, an imperative step of DirectPV's."""
        cluster, tier = scope.cluster, scope.site.storage.aistor
        chart = scope.site.versions.charts[AIStorVolumeManager.chart]
        nodes = AIStorVolumeManager.directpv_nodes([h.name for h in cluster.pool(tier.pool).hosts])
        return [
            OperatorStep(
                Stage.STORAGE,
                "AIStor drives",
                f"""
hand the {tier.pool} pool's NVMe drives to it (an
imperative step of the volume manager); the ObjectStore's volume claims bind to them, and until then
`{application_name(cluster.name, self.name)}` stays Progressing and the root waits. The `kubectl directpv` plugin is the binary MinIO
publishes for the DirectPV release that chart {chart.chart} {chart.version} deploys (AIStor's
DirectPV docs, CLI Reference: Install), on the admin host's PATH as `kubectl-directpv`; its version
must be the node servers' image tag:

```sh
kubectl directpv --version
kubectl -n directpv get daemonset node-server -o jsonpath='{{.spec.template.spec.containers[*].image}}'
kubectl directpv discover --nodes '{nodes}'
# review drives.yaml: every drive listed is erased
kubectl directpv init drives.yaml --dangerous
```
""",
                after=application_name(cluster.name, AIStorVolumeManager.name),
            ),
            OperatorStep(
                Stage.DAY_2_REPAIRS,
                f"Replacing an AIStor drive or server (`{cluster.name}`, pool {tier.pool})",
                _replacement_section(scope),
            ),
        ]

    def watches(self, scope: ClusterScope) -> list[Watch]:
        return [ErasureWatch(scope.site.aistor_layout().parity)]

    def state(self, ctx: ClusterContext) -> list[State]:
        parity = ctx.site.aistor_layout().parity
        second = ctx.site.services.backups.second.name
        return [
            State(
                OBJECT_STORE,
                "every bucket: backups, Harbor's blobs, the databases' WAL, logs, tenants' buckets",
                "state",
                copies=(
                    f"erasure coded in place (EC:{parity}): each object readable with {parity} drives of its "
                    "set lost (`sitegen plan`'s budget says how many servers)",
                    f"outside AIStor, on {second}: the backups' and the databases' copies; none of tenants' "
                    "buckets (versions only) nor of Harbor's blobs (pulled again through the proxy caches)",
                ),
            ),
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        site = ctx.site
        tier = site.storage.aistor
        ObjectStore(
            scope,
            "ObjectStore",
            name=OBJECT_STORE,
            namespace=self.namespace,
            pool=ctx.cluster.pool(tier.pool),
            tier=tier,
            parity=site.aistor_layout().parity,
            image=ctx.image("aistor-server-rdma" if tier.rdma else "aistor-server"),
            fabric=site.fabric,
            store=ctx.store,
        )
        hosts = self.front_door_hosts(ctx)
        if hosts:
            S3FrontDoors(
                scope, "FrontDoors", store=OBJECT_STORE, namespace=self.namespace,
                addresses=front_door_addresses(ctx.cluster.spec.load_balancer_cidr, hosts),
                interface=site.network.kubernetes.interface,
            )  # fmt: skip
        # AIStor (server and volume manager) runs read-only without its licence
        for licensed in (ctx.get(AIStorOperator), ctx.get(AIStorVolumeManager)):
            license_secret(scope, f"License-{licensed.name}", namespace=licensed.namespace, store=ctx.store)


def _replacement_section(scope: ClusterScope) -> str:
    """Replacing a drive or a whole server, within the erasure budget of each server pool (Day 2)."""
    tier = scope.site.storage.aistor
    budgets = [b for p, b in scope.pool_budgets if p.name == tier.pool]
    per_pool = "; ".join(f"{b.pool}: {b.down} ({b.why})" for b in budgets)
    return f"""
Servers that may be down at once, per server pool: {per_pool}. More than that takes erasure sets below
their read quorum: their objects are unreadable until the servers return (`sitegen plan` says how much).
The AIStor operator keeps a PodDisruptionBudget per pool, so `kubectl drain` waits rather than going past it.

A failed drive: AIStor keeps serving from parity. Put the new drive in, hand it to the volume manager,
move the failed drive's volume onto it, and AIStor heals the set:

```sh
kubectl directpv discover --nodes <node> && kubectl directpv init drives.yaml --dangerous
kubectl directpv list drives --nodes <node>          # the failed drive's ID and the new one's
kubectl directpv cordon <failed-drive-id>
kubectl directpv move <failed-drive-id> <new-drive-id>
kubectl -n {OBJECT_STORE} delete pod <the server pod on that node>   # remounts; healing starts
```

A whole server: cordon and drain it (its ObjectStore pod stops; within the budget above), repair or
replace the hardware keeping its name and address (synth refuses either change), and join it again
(Rebuilding a host of pool `{tier.pool}`). Drives moved from the failed chassis keep what the volume manager wrote on them
(the XFS filesystem whose UUID names the drive): do not initialize them. Its node server finds them, they
list as Ready again (`kubectl directpv list drives --nodes <node>`), and the server's data is there
without healing it over the network. `discover` offers only drives without a filesystem: initialize
those alone (new drives), as above, then delete the pending pod. A server pool is never
resized: more servers are a new entry of `storage.aistor.server_pools`, and a pool leaves only after
`mc admin decommission start` has moved its objects off it.
"""
