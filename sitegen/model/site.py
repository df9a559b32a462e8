"""The site: every config file's model in one object, validated once, with the figures derived from it.

Each top-level field is one file of config/ (`pools` is config/pools.yaml, ...). The checks that span
files live beside the models they check; here they only run, in an order where later rules rely on
references earlier rules proved valid.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

from pydantic import Field, model_validator

from sitegen.model.capacity import Capacity, total
from sitegen.model.clusters import Cluster, check_cidrs, check_clusters
from sitegen.model.dashboards import Dashboard, check_dashboards
from sitegen.model.erasure import ErasureLayout, alternative_set_sizes, erasure_layout
from sitegen.model.extensions import Extensions, check_extensions
from sitegen.model.fabric import Fabric, check_fabric
from sitegen.model.fields import DnsLabel, Strict
from sitegen.model.gitops import GitOps
from sitegen.model.hardware import Hardware
from sitegen.model.hosts import Hosts, check_hosts_baseline
from sitegen.model.maintenance import Budget, aistor_budget, etcd_budget, gpu_budget
from sitegen.model.network import Network
from sitegen.model.pools import CONTROL_PLANE_ROLE, INFRA_ROLE, Pool, check_hosts, check_pool_hardware
from sitegen.model.secrets import Secrets
from sitegen.model.services import Services, check_services
from sitegen.model.storage import Storage, check_storage
from sitegen.model.tenants import Tenant, check_tenants
from sitegen.model.variants import Variant, check_front_doors, check_variants
from sitegen.model.versions import Versions


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
    hosts: Hosts
    dashboards: dict[DnsLabel, Dashboard] = {}
    extensions: Extensions = Extensions()

    @model_validator(mode="after")
    def _check(self) -> Site:
        check_pool_hardware(self.pools, self.hardware)
        check_hosts(self.pools, self.network)
        check_fabric(self.fabric, self.pools, self.hardware)
        check_clusters(self.clusters, self.pools, self.network)
        check_cidrs(self.network, self.fabric, self.clusters)
        check_variants(self.variants, self.clusters, self.pools)
        check_storage(self.storage, self.pools, self.hardware)
        check_front_doors(
            self.variants,
            self.clusters,
            self.pools,
            self.storage.aistor.pool,
            [self.services.gateway.address],
        )
        check_services(
            self.services,
            clusters=self.clusters,
            pools=self.pools,
            hardware=self.hardware,
            storage=self.storage,
            tenants=self.tenants,
        )
        check_dashboards(self.dashboards)
        check_hosts_baseline(self.hosts, set(self.hardware))
        check_extensions(self.extensions, set(self.clusters), set(self.tenants))
        gpus = self.gpu_capacity()
        check_tenants(
            self.tenants,
            {"cpu": gpus.cpu_cores, "memory_gb": gpus.memory_gb, "gpus": gpus.gpus},
            gpu_pools=[
                (name, p.count, self.hardware[p.hardware].gpu.count)  # type: ignore[union-attr]
                for name, p in self.pools.items()
                if self.hardware[p.hardware].gpu
            ],
            aistor_usable_tb=sum(x.usable_gb for x in self.aistor_layouts()) / 1000,
        )
        return self

    # --- derived views -------------------------------------------------------------------------

    def hardware_of(self, pool: str) -> Hardware:
        return self.hardware[self.pools[pool].hardware]

    def pool_capacity(self, pool: str) -> Capacity:
        return Capacity.of(self.hardware_of(pool), self.pools[pool].count)

    def gpu_capacity(self) -> Capacity:
        """The GPU pools of the whole site together."""
        return total(self.pool_capacity(name) for name in self.pools if self.hardware_of(name).gpu)

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

    @cached_property
    def infra_pool(self) -> str:
        return next(n for n, p in self.pools.items() if p.role == INFRA_ROLE)

    @property
    def default_variant(self) -> str:
        return next(iter(self.variants))

    def aistor_layout(self, set_size: int | None = None, parity: int | None = None) -> ErasureLayout:
        """The erasure layout of AIStor's first server pool as configured, or with the set size and
        parity given (the alternatives worth comparing before it starts)."""
        tier = self.storage.aistor
        nvme = self.hardware_of(tier.pool).nvme
        return erasure_layout(
            servers=tier.server_pools[0].servers,
            drives_per_server=nvme.drives,
            drive_gb=nvme.drive_gb,
            set_size=set_size if set_size is not None else tier.explicit_set_size,
            parity=parity if parity is not None else tier.explicit_parity,
        )

    def aistor_layouts(self) -> list[ErasureLayout]:
        """Each server pool's layout. Parity is one storage class for the whole ObjectStore: the
        configured one, or the default of the first pool's sets."""
        tier = self.storage.aistor
        nvme = self.hardware_of(tier.pool).nvme
        parity = self.aistor_layout().parity
        return [
            erasure_layout(
                servers=pool.servers,
                drives_per_server=nvme.drives,
                drive_gb=nvme.drive_gb,
                set_size=tier.explicit_set_size,
                parity=parity,
            )
            for pool in tier.server_pools
        ]

    def maintenance_budgets(self) -> list[Budget]:
        """Per pool with a promise to keep: how many nodes may be down at once (model/maintenance.py)."""
        cp = self.control_plane_pool
        return self.pool_budgets(
            (cp, self.pools[cp].count), ((n, p.count) for n, p in self.pools.items() if n != cp)
        )

    def pool_budgets(
        self, control_plane: tuple[str, int], workers: Iterable[tuple[str, int]]
    ) -> list[Budget]:
        """The budgets of one etcd membership (pool, members) and of worker pools (pool, nodes): the
        whole site's, or one cluster's (whose control plane may be carved out of another pool)."""
        budgets = [etcd_budget(*control_plane)]
        tier = self.storage.aistor
        serving = sum(m.replicas for m in self.services.serving.models)  # one node per engine replica
        for name, nodes in workers:
            if name == tier.pool:
                for i, (pool, layout) in enumerate(
                    zip(tier.server_pools, self.aistor_layouts(), strict=True)
                ):
                    budgets.append(
                        aistor_budget(f"{tier.pool}/pool-{i}", pool.servers, layout, tier.maintenance_margin)
                    )
            elif self.hardware_of(name).gpu is not None:
                budgets.append(gpu_budget(name, nodes, serving))
        return budgets

    def aistor_alternatives(self) -> list[ErasureLayout]:
        """The set sizes worth comparing, each at EC:2 to EC:4."""
        base = self.aistor_layout()
        return [
            self.aistor_layout(size, parity) for size in alternative_set_sizes(base) for parity in (2, 3, 4)
        ]
