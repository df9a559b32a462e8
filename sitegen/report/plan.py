"""Capacity and fabric plan: every figure is computed from the site model, none is typed."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from sitegen.components.context import ClusterScope
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.components.storage.aistor import AIStor
from sitegen.model import ErasureLayout, Site
from sitegen.model.layout import resolve
from sitegen.report.recovery import recovery_points, stated_volumes
from sitegen.report.table import table, wrapped_prose


@dataclass(frozen=True)
class Figures:
    nodes: int = 0
    cores: int = 0
    memory_gb: int = 0
    gpus: int = 0
    hbm_gb: int = 0
    nvme_drives: int = 0
    nvme_gb: int = 0
    ethernet_ports: int = 0
    ndr_ports: int = 0
    ndr_gbps: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


@dataclass(frozen=True)
class RailFigures:
    rail: str
    ports: dict[str, int]  # pool -> NDR ports on this rail
    gbps: int


@dataclass(frozen=True)
class Plan:
    pools: dict[str, Figures]
    hardware: dict[str, Figures]
    site: Figures
    aistor_raw_gb: int
    aistor_drives: int
    local_cache_gb: int
    powerscale_raw_gb: int
    rails: list[RailFigures]

    def ndr_gbps(self, pool: str) -> int:
        return self.pools[pool].ndr_gbps


def pool_figures(site: Site, pool: str) -> Figures:
    hw = site.hardware_of(pool)
    n = site.pools[pool].count
    held = site.pool_capacity(pool)
    return Figures(
        nodes=n,
        cores=held.cpu_cores,
        memory_gb=held.memory_gb,
        gpus=held.gpus,
        hbm_gb=held.hbm_gb,
        nvme_drives=n * hw.nvme.drives,
        nvme_gb=n * hw.nvme.total_gb,
        ethernet_ports=n * hw.ethernet_100g_ports,
        ndr_ports=n * hw.ndr400_ports,
        ndr_gbps=n * hw.ndr400_ports * site.fabric.link_gbps,
    )


def compute_plan(site: Site) -> Plan:
    pools = {name: pool_figures(site, name) for name in site.pools}
    by_hw: dict[str, Figures] = {}
    for name, figures in pools.items():
        model = site.pools[name].hardware
        by_hw[model] = by_hw.get(model, Figures()) + figures
    total = sum(pools.values(), Figures())
    fabric = site.fabric
    rails = []
    for rail in fabric.rails:
        ports = {
            pool: site.pools[pool].count * sum(1 for nic in nics if nic.rail == rail)
            for pool, nics in fabric.nics.items()
        }
        rails.append(RailFigures(rail, ports, sum(ports.values()) * fabric.link_gbps))
    aistor = pools[site.storage.aistor.pool]
    return Plan(
        pools=pools,
        hardware=dict(sorted(by_hw.items())),
        site=total,
        aistor_raw_gb=aistor.nvme_gb,
        aistor_drives=aistor.nvme_drives,
        local_cache_gb=sum(pools[p].nvme_gb for p in site.storage.local_cache.pools),
        powerscale_raw_gb=site.storage.powerscale.raw_gb,
        rails=rails,
    )


def _num(value: float) -> str:
    """Seed-style numbers: thousands separators, no trailing zeros (22,118.4; 107.04; 11,136)."""
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _tb(gb: int) -> str:
    return _num(gb / 1000)


def storage_section(site: Site, plan: Plan) -> list[str]:
    """The storage map: tiers, AIStor server pools and the first pool's layout (docs/site.md shows it)."""
    layouts = site.aistor_layouts()
    return [
        "Storage hierarchy (capacity at the top, speed at the bottom)",
        *table(["tier", "where", "raw TB"], _tier_rows(site, plan, layouts)),
        "",
        *_bucket_lines(site, layouts),
        "",
        *_server_pool_lines(site, layouts),
        "",
        *_first_pool_lines(site),
    ]


def _tier_rows(site: Site, plan: Plan, layouts: list[ErasureLayout]) -> list[list[str]]:
    ps = site.storage.powerscale
    gpu_models = sorted({hw.gpu.model for hw in site.hardware.values() if hw.gpu})
    return [
        [
            "PowerScale (NFS, external)",
            f"{ps.nodes}x {ps.model}",
            f"{_tb(ps.raw_gb)} ({_num(ps.raw_gb / 1e6)} PB)",
        ],
        [
            "AIStor (S3)",
            f"pool {site.storage.aistor.pool}: {_num(plan.aistor_drives)} NVMe",
            f"{_tb(plan.aistor_raw_gb)} ({_num(round(plan.aistor_raw_gb / 1e6, 2))} PB), "
            f"usable {_num(round(sum(x.usable_gb for x in layouts) / 1e6, 2))} PB",
        ],
        [
            "local NVMe cache",
            "pools " + ", ".join(site.storage.local_cache.pools),
            _tb(plan.local_cache_gb),
        ],
        ["GPU HBM", f"{_num(plan.site.gpus)}x {', '.join(gpu_models)}", _tb(plan.site.hbm_gb)],
    ]


def _bucket_lines(site: Site, layouts: list[ErasureLayout]) -> list[str]:
    usable_tb = sum(x.usable_gb for x in layouts) / 1000
    buckets = tenant_buckets(site)
    return [
        f"Tenants' buckets in AIStor (hard quotas: {_num(sum(b.quota_tb for b in buckets))} of {_num(round(usable_tb))} TB usable)",
        *table(
            ["tenant", "bucket", "quota TB", "keeps", "key"],
            [
                [b.tenant, b.bucket, _num(b.quota_tb), b.keeps, f"tenant-{b.tenant} (its buckets only)"]
                for b in buckets
            ],
        ),
    ]


def _server_pool_lines(site: Site, layouts: list[ErasureLayout]) -> list[str]:
    """Each AIStor server pool's shape, then what losing too many drives of one of its sets costs."""
    out = ["AIStor server pools (each keeps the shape it started with; the site grows by adding one)"]
    out += table(
        ["pool", "servers", "drives", "sets", "set size", "parity", "raw TB", "usable TB"],
        [
            [
                f"pool-{i}",
                str(pool.servers),
                _num(x.drives),
                str(x.sets),
                str(x.set_size),
                f"EC:{x.parity}",
                _tb(x.raw_gb),
                _tb(x.usable_gb),
            ]
            for i, (pool, x) in enumerate(zip(site.storage.aistor.server_pools, layouts, strict=True))
        ],
    )
    for i, x in enumerate(layouts):
        out.append(
            f"pool-{i}: a set that loses more than {x.parity} of its {x.set_size} drives takes its objects "
            f"down (1/{x.sets} of the pool, {_tb(x.usable_gb // x.sets)} TB usable); they are lost for good "
            "unless those drives come back: nothing else holds a copy"
        )
    return out


def _first_pool_lines(site: Site) -> list[str]:
    layout = site.aistor_layout()
    return [
        f"First pool's layout: {layout.sets} sets of {layout.set_size} drives at EC:{layout.parity}, "
        f"{_tb(layout.usable_gb)} TB usable of {_tb(layout.raw_gb)} TB raw ({layout.efficiency:.1%}); "
        "the alternatives, while it has not started:",
        *table(
            ["set size", "parity", "sets", "efficiency", "usable TB", "usable PB"],
            [
                [
                    str(alt.set_size),
                    f"EC:{alt.parity}",
                    str(alt.sets),
                    f"{alt.efficiency:.1%}",
                    _tb(alt.usable_gb),
                    _num(round(alt.usable_gb / 1e6, 2)),
                ]
                for alt in site.aistor_alternatives()
            ],
        ),
    ]


def plan_json(site: Site) -> str:
    """The plan's figures for scripts: capacity per pool, hardware model and site, storage, the rails,
    each AIStor server pool's layout, each pool's maintenance budget and the backups' recovery points."""
    layouts = site.aistor_layouts()
    data = {
        **asdict(compute_plan(site)),
        "aistor_server_pools": [
            {
                "servers": pool.servers,
                "drives": x.drives,
                "sets": x.sets,
                "set_size": x.set_size,
                "parity": x.parity,
                "raw_gb": x.raw_gb,
                "usable_gb": x.usable_gb,
            }
            for pool, x in zip(site.storage.aistor.server_pools, layouts, strict=True)
        ],
        "recovery_points": [asdict(c) for c in recovery_points(site)],
        "stateful_volumes": [asdict(v) for v in stated_volumes(site)],
        "tenant_buckets": [asdict(b) for b in tenant_buckets(site)],
        "s3_paths": [asdict(p) for p in s3_paths(site)],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_plan(site: Site) -> str:
    plan = compute_plan(site)
    out = _capacity_lines(site, plan)
    out += ["", *storage_section(site, plan)]
    out += ["", *_rail_lines(site, plan)]
    out += ["", "Maintenance: nodes of a pool that may be down at once"]
    out += table(
        ["pool", "nodes", "down at once", "because"],
        [[b.pool, str(b.nodes), str(b.down), b.why] for b in site.maintenance_budgets()],
    )
    out += ["", *_backup_lines(site)]
    out += ["", *_volume_lines(site)]
    out += _gpu_health_lines(site)
    out += _aistor_fabric_lines(site, plan)
    out += ["", "S3 bandwidth per variant (the 100GbE Kubernetes network; AIStor's servers' ports)"]
    out += table(
        ["variant", "consumers reach S3", "entry points", "Gbps"],
        [[s.variant, s.path, str(s.entries), _num(s.gbps)] for s in s3_paths(site)],
    )
    return "\n".join(wrapped_prose(out)) + "\n"


def _capacity_row(label: str, f: Figures) -> list[str]:
    return [
        label,
        _num(f.nodes),
        _num(f.cores),
        _tb(f.memory_gb),
        _num(f.gpus),
        _num(f.nvme_drives),
        _tb(f.nvme_gb),
        _num(f.ethernet_ports),
        _num(f.ndr_ports),
        _num(f.ndr_gbps / 1000),
    ]


def _capacity_lines(site: Site, plan: Plan) -> list[str]:
    """Capacity per pool (with the site's total), then per hardware model."""
    columns = [
        "nodes",
        "cores",
        "RAM TB",
        "GPUs",
        "NVMe",
        "NVMe TB",
        "100GbE ports",
        f"NDR{site.fabric.link_gbps} ports",
        "NDR Tbps",
    ]
    out = ["Capacity per pool (decimal units, as the seed counts them)"]
    out += table(
        ["pool", *columns],
        [_capacity_row(n, f) for n, f in plan.pools.items()] + [_capacity_row("site", plan.site)],
    )
    out += ["", "Capacity per hardware model"]
    out += table(
        ["model", *columns],
        [
            _capacity_row(f"{site.hardware[m].vendor} {site.hardware[m].model}", f)
            for m, f in plan.hardware.items()
        ],
    )
    return out


def _rail_lines(site: Site, plan: Plan) -> list[str]:
    pools_on_fabric = list(site.fabric.nics)
    return [
        f"NDR{site.fabric.link_gbps} fabric: ports per rail and endpoint bandwidth",
        *table(
            ["rail", *pools_on_fabric, "Tbps"],
            [[r.rail, *(_num(r.ports[p]) for p in pools_on_fabric), _num(r.gbps / 1000)] for r in plan.rails]
            + [
                [
                    "all",
                    *(_num(plan.pools[p].ndr_ports) for p in pools_on_fabric),
                    _num(sum(plan.pools[p].ndr_gbps for p in pools_on_fabric) / 1000),
                ]
            ],
        ),
    ]


def _backup_lines(site: Site) -> list[str]:
    return [
        "Backups: recovery point (longest gap between runs) and retention per data class",
        *table(
            ["data", "copy in", "RPO h", "kept d", "how"],
            [
                [c.data, c.where, _num(round(c.rpo_hours, 1)) if c.rpo_hours is not None else "-",
                 str(c.kept_days) if c.kept_days is not None else "-", c.how]
                for c in recovery_points(site)
            ],
        ),
    ]  # fmt: skip


def _volume_lines(site: Site) -> list[str]:
    return [
        "Stateful volumes: what each holds, its class, and its copies or why it needs none",
        *table(
            ["app", "workload", "holds", "class", "copies, or why none"],
            [
                [
                    v.app,
                    v.workload,
                    v.holds,
                    v.data,
                    "; ".join(v.copies) if v.copies else f"none: {v.without_copy}",
                ]
                for v in stated_volumes(site)
            ],
        ),
    ]


def _gpu_health_lines(site: Site) -> list[str]:
    """The GPU health checks' thresholds, from the first GPU pool (none without GPUs)."""
    health = site.services.health
    gpu_pools = [name for name, pool in site.pools.items() if site.hardware[pool.hardware].gpu is not None]
    if not gpu_pools:
        return []
    expected = GpuHealth.expected_busbw_gbps(site, gpu_pools[0])
    return [
        "",
        "GPU health checks (lowest Kueue priority: only on idle GPUs)",
        f"NCCL all-reduce over {health.nccl.nodes} {gpu_pools[0]} nodes, cron `{health.nccl.schedule}`: fails "
        f"below {_num(round(expected * health.nccl.min_fraction, 1))} GB/s bus bandwidth "
        f"({health.nccl.min_fraction:.0%} of the nodes' {_num(expected)} GB/s of NDR rails)",
        f"DCGM diagnostics level {health.dcgm.level} on one node, cron `{health.dcgm.schedule}`; alert when no "
        f"check passed for {health.max_age_days} days",
    ]


def _aistor_fabric_lines(site: Site, plan: Plan) -> list[str]:
    """Why AIStor's pool has NDR ports that carry no S3 (none when RDMA is on or its pool has none)."""
    aistor = site.storage.aistor
    if aistor.pool not in site.fabric.nics or aistor.rdma:
        return []
    storage = plan.pools[aistor.pool]
    return [
        "",
        f"AIStor over the fabric: off (storage.yaml aistor.rdma: false). The {aistor.pool} pool's "
        f"{_num(storage.ndr_gbps / 1000)} Tbps of NDR ports above carry IPoIB only; S3 from GPU "
        "nodes runs over the 100GbE Kubernetes network, and the seed's GPUDirect RDMA path to "
        "AIStor is deferred until aistor.rdma is true.",
    ]


@dataclass(frozen=True)
class TenantBucket:
    tenant: str
    bucket: str
    quota_tb: int
    keeps: str  # what it keeps of deleted objects, or when its objects expire


def tenant_buckets(site: Site) -> list[TenantBucket]:
    found = []
    for tenant, spec in site.tenants.items():
        for name, b in spec.buckets(tenant).items():
            keeps = f"deleted and overwritten objects {b.keep_days} d" if b.versioning else "nothing deleted"
            if b.expire_days is not None:
                keeps += f"; every object expires after {b.expire_days} d"
            found.append(TenantBucket(tenant, name, b.quota_tb, keeps))
    return found


@dataclass(frozen=True)
class S3Path:
    variant: str
    path: str
    entries: int  # hosts S3 traffic enters AIStor on
    gbps: int  # what those hosts' Ethernet ports carry together


def s3_paths(site: Site) -> list[S3Path]:
    """How each variant's consumers reach S3: inside AIStor's cluster its Service spreads connections
    over every server; from another cluster each server has an address of its own (the front doors)."""
    tier = site.storage.aistor
    servers = site.pools[tier.pool].count
    per_server = site.hardware_of(tier.pool).ethernet_100g_ports * 100
    found = []
    for name in site.variants:
        layout = resolve(site, name)
        home = next(c for c in layout.clusters if any(p.name == tier.pool for p in c.pools))
        if len(layout.clusters) == 1:
            found.append(S3Path(name, "in-cluster Service, every server", servers, servers * per_server))
            continue
        doors = len(AIStor.front_door_hosts(ClusterScope(site, layout, home)))
        if doors:
            found.append(S3Path(name, "an address per server (DNS round robin)", doors, doors * per_server))
        else:
            found.append(S3Path(name, "one load-balancer address: one node's ports", 1, per_server))
    return found
