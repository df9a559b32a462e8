"""A picture of the site (`dist/site.svg`), drawn from the model on every synth.

Four bands: the clusters of each variant with their pools (node count, hardware, GPUs), the storage
(AIStor's server pools over their hosts, PowerScale beside), the network planes with their address
ranges and the pools on each, and the NDR400 rails with which GPUs sit behind which NIC on which rail
(the storage servers' NICs on theirs). For people who plan racks and cabling.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import drawsvg as draw

from sitegen.model import PoolLayout, Site, resolve

PICTURE = PurePosixPath("site.svg")  # in dist/, beside the variants

WIDTH = 1200
PAD = 20
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
ROLE_COLOURS = {
    "control-plane": "#d8e2f3",
    "infra": "#dcefd9",
    "compute": "#f2f2f2",
    "gpu": "#fbe3c8",
    "aistor": "#e6dcf1",
}
RAIL_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


def _text(group: draw.Group, x: float, y: float, text: str, size: int = 12, **kw: object) -> None:
    group.append(draw.Text(text, size, x, y, font_family=FONT, **kw))


def _pool_box(where: str, pool: PoolLayout, x: float, y: float, w: float) -> draw.Group:
    hardware = pool.hardware
    group = draw.Group(id=f"{where}-{pool.name}", class_="pool")
    group.append(
        draw.Rectangle(x, y, w, 58, rx=6, fill=ROLE_COLOURS.get(pool.role, "#eeeeee"), stroke="#555")
    )
    _text(group, x + 8, y + 18, f"{pool.name}: {len(pool.hosts)} nodes", 13, font_weight="bold")
    _text(group, x + 8, y + 34, f"{hardware.vendor} {hardware.model}", 11)
    gpus = f", {hardware.gpu.count}x {hardware.gpu.model}" if hardware.gpu else ""
    nvme = f", {hardware.nvme.drives}x {hardware.nvme.drive_gb / 1000:g} TB NVMe"
    _text(group, x + 8, y + 49, f"{hardware.cpu_cores} cores, {hardware.memory_gb} GB{gpus}{nvme}", 11)
    return group


def _clusters(site: Site, top: float) -> tuple[draw.Group, float]:
    band = draw.Group(id="clusters")
    variants = list(site.variants)
    column = (WIDTH - PAD * (len(variants) + 1)) / len(variants)
    bottom = top
    for i, name in enumerate(variants):
        layout = resolve(site, name)
        x = PAD + i * (column + PAD)
        _text(band, x, top + 16, f"variant {name}", 15, font_weight="bold")
        y = top + 28
        for cluster in layout.clusters:
            height = 34 + 66 * len(cluster.pools)
            box = draw.Group(id=f"{name}-{cluster.name}", class_="cluster")
            box.append(
                draw.Rectangle(x, y, column, height, rx=8, fill="none", stroke="#333", stroke_width=1.5)
            )
            nodes = sum(len(p.hosts) for p in cluster.pools)
            hub = " (Argo CD hub)" if cluster.name == layout.hub.name else ""
            _text(box, x + 10, y + 20, f"cluster {cluster.name}: {nodes} nodes{hub}", 13, font_weight="bold")
            for j, pool in enumerate(cluster.pools):
                box.append(_pool_box(f"{name}-{cluster.name}", pool, x + 10, y + 30 + 66 * j, column - 20))
            band.append(box)
            y += height + 12
        bottom = max(bottom, y)
    return band, bottom


def _planes(site: Site, top: float) -> tuple[draw.Group, float]:
    band = draw.Group(id="planes")
    net = site.network
    every_pool = ", ".join(site.pools)
    on_fabric = ", ".join(p for p in site.pools if p in site.fabric.nics)
    planes = [
        (
            "management: BMC",
            f"VLAN {net.management.bmc.vlan}, {net.management.bmc.cidr}; pools {every_pool}, PowerScale",
            "#999999",
        ),
        (
            "management: OS",
            f"VLAN {net.management.os.vlan}, {net.management.os.cidr}; pools {every_pool}",
            "#777777",
        ),
        (
            f"Kubernetes {net.kubernetes.link_gbps}GbE",
            f"VLAN {net.kubernetes.vlan}, {net.kubernetes.cidr}, MTU {net.kubernetes.mtu}; pools {every_pool}, "
            "PowerScale NFS, AIStor S3",
            "#3366aa",
        ),
        (
            f"NDR{site.fabric.link_gbps} RDMA rails",
            ", ".join(f"{n} {r.cidr}" for n, r in site.fabric.rails.items()) + f"; pools {on_fabric}",
            "#aa3333",
        ),
    ]
    _text(band, PAD, top + 16, "network planes", 15, font_weight="bold")
    for i, (name, detail, colour) in enumerate(planes):
        y = top + 34 + 26 * i
        plane = draw.Group(id=f"plane-{i}", class_="plane")
        plane.append(draw.Line(PAD, y, PAD + 260, y, stroke=colour, stroke_width=5))
        _text(plane, PAD + 275, y + 4, f"{name}: {detail}", 12)
        band.append(plane)
    return band, top + 34 + 26 * len(planes)


def _rails(site: Site, top: float) -> tuple[draw.Group, float]:
    band = draw.Group(id="rails")
    rails = list(site.fabric.rails)
    colour = {r: RAIL_COLOURS[i % len(RAIL_COLOURS)] for i, r in enumerate(rails)}
    _text(
        band, PAD, top + 16, "NDR rails: GPU -> NIC -> rail (one node of each pool)", 15, font_weight="bold"
    )
    rail_x = {r: WIDTH - 320 + 90 * i for i, r in enumerate(rails)}
    y = top + 36
    rows_top = y
    for pool_name, nics in sorted(site.fabric.nics.items()):
        node = draw.Group(id=f"nics-{pool_name}", class_="rail-map")
        _text(node, PAD, y + 14, f"{pool_name} node", 13, font_weight="bold")
        for nic in nics:
            y += 24
            link = draw.Group(id=f"nic-{pool_name}-{nic.name}", class_="nic", data_rail=nic.rail)
            gpus = " ".join(f"GPU{g}" for g in nic.gpus) or "S3 and replication traffic"
            _text(link, PAD + 20, y + 4, gpus, 11)
            link.append(draw.Rectangle(PAD + 330, y - 9, 150, 18, rx=3, fill="#ffffff", stroke="#555"))
            _text(link, PAD + 338, y + 4, f"{nic.name} / {nic.netdev}", 11)
            link.append(
                draw.Line(PAD + 480, y, rail_x[nic.rail], y, stroke=colour[nic.rail], stroke_width=2.5)
            )
            link.append(draw.Circle(rail_x[nic.rail], y, 4, fill=colour[nic.rail]))
            node.append(link)
        band.append(node)
        y += 34
    for rail in rails:
        line = draw.Group(id=f"rail-{rail}", class_="rail")
        line.append(
            draw.Line(rail_x[rail], rows_top, rail_x[rail], y - 14, stroke=colour[rail], stroke_width=4)
        )
        _text(
            line, rail_x[rail] - 18, rows_top - 4, f"rail {rail}", 12, font_weight="bold", fill=colour[rail]
        )
        band.append(line)
    return band, y


def _storage(site: Site, top: float) -> tuple[draw.Group, float]:
    """AIStor's server pools over the storage pool's hosts (in the order added), and PowerScale."""
    band = draw.Group(id="storage")
    aistor = site.storage.aistor
    _text(
        band,
        PAD,
        top + 16,
        f"storage: AIStor on pool {aistor.pool}, PowerScale beside",
        15,
        font_weight="bold",
    )
    hosts = [h.name for h in site.pools[aistor.pool].hosts]
    x, y, w = PAD, top + 30, 280
    first = 0
    for i, (pool, layout) in enumerate(zip(aistor.server_pools, site.aistor_layouts(), strict=True)):
        served = hosts[first : first + pool.servers]
        first += pool.servers
        box = draw.Group(id=f"storage-pool-{i}", class_="server-pool")
        box.append(draw.Rectangle(x, y, w, 58, rx=6, fill=ROLE_COLOURS["aistor"], stroke="#555"))
        _text(
            box,
            x + 8,
            y + 18,
            f"pool-{i}: {pool.servers} servers ({served[0]}..{served[-1]})",
            13,
            font_weight="bold",
        )
        _text(
            box,
            x + 8,
            y + 34,
            f"{layout.drives} drives, {layout.sets} sets of {layout.set_size} at EC:{layout.parity}",
            11,
        )
        _text(
            box,
            x + 8,
            y + 49,
            f"{layout.usable_gb / 1e6:.2f} PB usable of {layout.raw_gb / 1e6:.2f} PB raw",
            11,
        )
        band.append(box)
        x += w + PAD
        if x + w > WIDTH:
            x, y = PAD, y + 66
    ps = site.storage.powerscale
    box = draw.Group(id="storage-powerscale", class_="nas")
    box.append(draw.Rectangle(x, y, w, 58, rx=6, fill="#eeeeee", stroke="#555", stroke_dasharray="4 3"))
    _text(box, x + 8, y + 18, f"PowerScale (external): {ps.nodes}x {ps.model}", 13, font_weight="bold")
    _text(box, x + 8, y + 34, f"{ps.raw_gb / 1e6:g} PB raw, NFS on the Kubernetes plane", 11)
    band.append(box)
    for tenant, spec in site.tenants.items():  # what each tenant holds in AIStor
        x += w + PAD
        if x + w > WIDTH:
            x, y = PAD, y + 66
        buckets = spec.object_storage
        box = draw.Group(id=f"storage-tenant-{tenant}", class_="tenant-buckets")
        box.append(draw.Rectangle(x, y, w, 58, rx=6, fill="#ffffff", stroke="#7a5ca8", stroke_width=2))
        _text(
            box, x + 8, y + 18, f"tenant {tenant}: {len(buckets)} buckets in AIStor", 13, font_weight="bold"
        )
        _text(
            box,
            x + 8,
            y + 34,
            f"{sum(b.quota_tb for b in buckets.values()):,} TB of hard quotas, a key of its own",
            11,
        )
        _text(box, x + 8, y + 49, ", ".join(buckets), 11)
        band.append(box)
    return band, y + 66


def site_svg(site: Site) -> str:
    """The picture as SVG text (deterministic: the model's order, no timestamps)."""
    bands = []
    top = 50.0
    for make in (_clusters, _storage, _planes, _rails):
        band, top = make(site, top)
        bands.append(band)
        top += 20
    picture = draw.Drawing(WIDTH, top, id_prefix="site")
    picture.append(draw.Rectangle(0, 0, WIDTH, top, fill="white"))
    nodes = sum(p.count for p in site.pools.values())
    gpus = site.gpu_capacity().gpus
    title = f"{len(site.pools)} pools, {nodes} nodes, {gpus} GPUs; variants {', '.join(site.variants)}"
    _text(picture, PAD, 30, title, 18, font_weight="bold")  # type: ignore[arg-type]
    for band in bands:
        picture.append(band)
    return picture.as_svg()
