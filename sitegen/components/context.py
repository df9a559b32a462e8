"""What a component sees of the site: one cluster of one variant, and the components present.

`ClusterScope` is what decides whether a component applies; `ClusterContext` adds the components the
cluster (and the variant) actually has, reached by type, never by name string.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from constructs.node_faults import FabricPool
from sitegen.model import ClusterLayout, ConfigError, ImagePin, Placement, PoolLayout, Site, VariantLayout
from sitegen.model.capacity import Capacity, total
from sitegen.model.maintenance import Budget


class Part(Protocol):
    """What the context reads of a component (base.py's `Component`, which takes a context in every
    hook: the context knows components only by this, so that neither module imports the other)."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def security(self) -> object | None: ...


C = TypeVar("C")


@dataclass(frozen=True)
class ClusterScope:
    site: Site
    variant: VariantLayout
    cluster: ClusterLayout

    @property
    def is_hub(self) -> bool:
        """The cluster Argo CD and the central services run on."""
        return self.cluster.name == self.variant.hub.name

    @property
    def pool_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.cluster.pools)

    @property
    def pool_budgets(self) -> list[tuple[PoolLayout, Budget]]:
        """The model's maintenance budgets of this cluster's pools (Site.pool_budgets), each with its pool."""
        cp = self.cluster.control_plane
        budgets = self.site.pool_budgets(
            (cp.name, len(cp.hosts)), ((p.name, len(p.hosts)) for p in self.cluster.worker_pools)
        )
        return [(self.cluster.pool(b.pool.partition("/")[0]), b) for b in budgets]

    @property
    def gpu_pools(self) -> list[PoolLayout]:
        return [p for p in self.cluster.pools if p.hardware.gpu is not None]

    @property
    def gpu_capacity(self) -> Capacity:
        """The cluster's GPU pools together: what Kueue's queues and the tenants' quotas share."""
        return total(p.capacity for p in self.gpu_pools)

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpu_pools)

    @property
    def fabric_pools(self) -> list[PoolLayout]:
        """Pools with NICs on the NDR rails."""
        return [p for p in self.cluster.pools if p.name in self.site.fabric.nics]

    def ndr_ports(self, pools: Iterable[PoolLayout]) -> tuple[FabricPool, ...]:
        """Of each of `pools` on the NDR rails, its RDMA devices as node-exporter names them."""
        nics = self.site.fabric.nics
        return tuple(
            FabricPool(p.name, tuple(nic.name for nic in nics[p.name])) for p in pools if p.name in nics
        )

    @property
    def on_fabric(self) -> bool:
        return bool(self.fabric_pools)

    @property
    def system_placement(self) -> Placement:
        return self.cluster.system_pool.placement

    @property
    def store(self) -> str:
        """The name of the SecretStore every ExternalSecret reads from, in its own namespace."""
        return self.site.secrets.store

    def image(self, key: str) -> ImagePin:
        return self.site.versions.images[key]

    def tag_only_image(self, key: str, composer: str) -> ImagePin:
        """An image whose reference an operator composes from its parts: a digest cannot be passed."""
        pin = self.image(key)
        if pin.digest:
            raise ConfigError(
                ("versions", "images", key, "digest"),
                f"{composer} composes this image's reference from repository and tag: pin it by tag only",
            )
        return pin

    def service_url(self, service: str, namespace: str, port: int | None = None) -> str:
        """A Service of this cluster by its full DNS name, over plain HTTP."""
        host = f"{service}.{namespace}.svc.{self.cluster.spec.dns_domain}"
        return f"http://{host}:{port}" if port else f"http://{host}"


@dataclass(frozen=True)
class ClusterContext(ClusterScope):
    components: tuple[Part, ...]  # this cluster's, in sync order
    variant_components: Mapping[str, tuple[Part, ...]]  # every cluster's of the variant
    waves: Mapping[str, int]  # sync wave by component name, computed from the declared dependencies
    # what the cluster's other apps rendered (app -> objects): given only to a component that
    # `reads_rendered`, which compose renders after the others
    rendered: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)

    def wave(self, component: Part) -> int:
        return self.waves[component.name]

    def find(self, kind: type[C]) -> C | None:
        return next((c for c in self.components if isinstance(c, kind)), None)

    def get(self, kind: type[C]) -> C:
        found = self.find(kind)
        if found is None:
            raise LookupError(f"cluster {self.cluster.name} has no {kind.__name__} component")
        return found

    def all(self, kind: type[C]) -> list[C]:
        return [c for c in self.components if isinstance(c, kind)]

    def site_namespaces(self) -> list[str]:
        """The namespaces this cluster's components create (the `namespaces` app renders them)."""
        return sorted({c.namespace for c in self.components if c.security is not None})

    def has(self, kind: type) -> bool:
        return self.find(kind) is not None
