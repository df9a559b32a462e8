"""A variant resolved into clusters and their pools: what each cluster's constructs are built from."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from sitegen.model.capacity import Capacity
from sitegen.model.clusters import Cluster
from sitegen.model.fabric import Fabric
from sitegen.model.hardware import Hardware
from sitegen.model.pools import CONTROL_PLANE_ROLE, INFRA_ROLE, ROLE_PREFIX, Host, Taint
from sitegen.model.site import Site


@dataclass(frozen=True)
class Placement:
    """Where a workload may run: the pool's node selector and the tolerations for its taints."""

    node_selector: dict[str, str]
    tolerations: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class PoolLayout:
    name: str
    role: str
    hardware: Hardware
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    hosts: tuple[Host, ...]

    @property
    def host_span(self) -> str:
        """Its hosts for prose: each of three or fewer, else the first and the last."""
        hosts = [h.name for h in self.hosts]
        return ", ".join(hosts) if len(hosts) <= 3 else f"{hosts[0]} ... {hosts[-1]}"

    @property
    def is_control_plane(self) -> bool:
        return self.role == CONTROL_PLANE_ROLE

    @property
    def capacity(self) -> Capacity:
        return Capacity.of(self.hardware, len(self.hosts))

    @property
    def placement(self) -> Placement:
        role_key = ROLE_PREFIX + self.role
        return Placement(
            node_selector={role_key: self.labels[role_key]},
            tolerations=tuple(t.toleration() for t in self.taints),
        )


@dataclass(frozen=True)
class ClusterLayout:
    name: str
    spec: Cluster
    pools: tuple[PoolLayout, ...]

    @property
    def control_plane(self) -> PoolLayout:
        return next(p for p in self.pools if p.is_control_plane)

    @property
    def worker_pools(self) -> tuple[PoolLayout, ...]:
        return tuple(p for p in self.pools if not p.is_control_plane)

    def pool(self, name: str) -> PoolLayout:
        return next(p for p in self.pools if p.name == name)

    @property
    def system_pool(self) -> PoolLayout:
        """Where cluster services run: the infra pool, or in a cluster without one (the AIStor
        cluster of the two-cluster variant) its small control plane."""
        return next((p for p in self.pools if p.role == INFRA_ROLE), self.control_plane)

    @property
    def node_count(self) -> int:
        return sum(len(p.hosts) for p in self.pools)


@dataclass(frozen=True)
class VariantLayout:
    name: str
    description: str
    clusters: tuple[ClusterLayout, ...]

    @property
    def hub(self) -> ClusterLayout:
        """The cluster with the infra pool: Argo CD runs there and manages every cluster."""
        return next(c for c in self.clusters if any(p.role == INFRA_ROLE for p in c.pools))

    @property
    def spokes(self) -> tuple[ClusterLayout, ...]:
        """The clusters the hub manages besides itself; their telemetry flows to the hub."""
        return tuple(c for c in self.clusters if c.name != self.hub.name)

    def rail_subnets(self, fabric: Fabric, cluster: ClusterLayout) -> dict[str, ipaddress.IPv4Network]:
        """Each rail's IPoIB range for `cluster`: the rail's CIDR split between the clusters of the
        variant that have nodes on it (in variant order), so no two clusters hand out one address on
        the shared fabric."""
        out = {}
        for rail, rail_spec in fabric.rails.items():
            sharing = [
                c.name
                for c in self.clusters
                if any(p.name in fabric.nics and rail in fabric.rails_of(p.name) for p in c.pools)
            ]
            if cluster.name not in sharing:
                continue
            bits = (len(sharing) - 1).bit_length()
            out[rail] = list(rail_spec.cidr.subnets(prefixlen_diff=bits))[sharing.index(cluster.name)]
        return out

    def server(self, cluster: ClusterLayout) -> str:
        """The API URL Argo CD on the hub uses for `cluster`."""
        if cluster.name == self.hub.name:
            return IN_CLUSTER
        return f"https://{cluster.spec.api.endpoint}"


IN_CLUSTER = "https://kubernetes.default.svc"


def resolve(site: Site, variant: str) -> VariantLayout:
    """Assign pools to clusters; a carved control plane takes its hosts out of the source pool."""
    spec = site.variants[variant]
    carved = {
        host
        for vc in spec.clusters.values()
        if vc.control_plane is not None
        for host in vc.control_plane.hosts
    }
    cp_pool = site.pools[site.control_plane_pool]
    clusters = []
    for cname, vc in spec.clusters.items():
        pools = [
            PoolLayout(
                name=name,
                role=site.pools[name].role,
                hardware=site.hardware_of(name),
                labels=site.node_labels(name),
                taints=tuple(site.pools[name].taints),
                hosts=tuple(h for h in site.pools[name].hosts if h.name not in carved),
            )
            for name in vc.pools
        ]
        if vc.control_plane is not None:
            source = site.pools[vc.control_plane.from_pool]
            by_name = {h.name: h for h in source.hosts}
            pools.insert(
                0,
                PoolLayout(
                    name=site.control_plane_pool,
                    role=CONTROL_PLANE_ROLE,
                    hardware=site.hardware[source.hardware],
                    labels=site.node_labels(site.control_plane_pool),
                    taints=tuple(cp_pool.taints),
                    hosts=tuple(by_name[name] for name in vc.control_plane.hosts),  # the first inits
                ),
            )
        clusters.append(ClusterLayout(name=cname, spec=site.clusters[cname], pools=tuple(pools)))
    return VariantLayout(name=variant, description=spec.description, clusters=tuple(clusters))
