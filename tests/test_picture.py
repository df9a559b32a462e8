"""The site picture (dist/site.svg): drawn from the model, well-formed, and following the rail map."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sitegen.model import load_site
from sitegen.report.picture import RAIL_COLOURS, site_svg

from .conftest import DIST

SVG = "{http://www.w3.org/2000/svg}"


def _groups(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    ids = [g.get("id") for g in root.iter(f"{SVG}g") if g.get("id")]
    assert len(ids) == len(set(ids)), "an id twice"
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id")}


def _texts(element: ET.Element) -> list[str]:
    return [t.text or "" for t in element.iter(f"{SVG}text")]


def test_the_picture_shows_every_cluster_pool_and_plane(site):
    svg = (DIST / "site.svg").read_text()
    assert svg == site_svg(site)  # committed = what the model draws
    groups = _groups(svg)
    assert "one-cluster-ai" in groups and {"two-cluster-ai", "two-cluster-aistor"} <= set(groups)
    for name, pool in site.pools.items():
        texts = _texts(groups[f"one-cluster-ai-{name}"])
        assert f"{name}: {pool.count} nodes" in texts
    assert "gpu: 12 nodes" in _texts(groups["one-cluster-ai-gpu"])
    assert any("8x nvidia-b300" in t for t in _texts(groups["one-cluster-ai-gpu"]))
    assert "control-plane: 3 nodes" in _texts(groups["two-cluster-aistor-control-plane"])
    planes = " ".join(_texts(groups["planes"]))
    assert str(site.network.kubernetes.cidr) in planes and str(site.network.management.bmc.cidr) in planes
    assert all(str(r.cidr) in planes for r in site.fabric.rails.values())


def test_each_nic_is_drawn_to_its_rail(site):
    groups = _groups(site_svg(site))
    rails = list(site.fabric.rails)
    for pool, nics in site.fabric.nics.items():
        for nic in nics:
            link = groups[f"nic-{pool}-{nic.name}"]
            assert link.get("data-rail") == nic.rail
            (line,) = link.iter(f"{SVG}path")  # drawsvg draws a line as a path
            assert line.get("stroke") == RAIL_COLOURS[rails.index(nic.rail)]
            assert " ".join(f"GPU{g}" for g in nic.gpus) in " ".join(_texts(link)) or not nic.gpus


def test_the_picture_changes_with_the_rail_map(site):
    nics = site.fabric.nics["gpu"]
    swapped = [
        nics[1].model_copy(update={"gpus": nics[0].gpus}),
        nics[0].model_copy(update={"gpus": nics[1].gpus}),
    ]
    fabric = site.fabric.model_copy(update={"nics": {**site.fabric.nics, "gpu": swapped + nics[2:]}})
    other = site.model_copy(update={"fabric": fabric})
    before, after = _groups(site_svg(site)), _groups(site_svg(other))
    assert (
        before["nic-gpu-mlx5_0"].get("data-rail") == "A" and after["nic-gpu-mlx5_0"].get("data-rail") == "A"
    )
    assert "GPU0 GPU1" in _texts(before["nic-gpu-mlx5_0"]) and "GPU2 GPU3" in _texts(after["nic-gpu-mlx5_0"])


def test_the_picture_shows_the_storage_server_pools_and_the_pools_on_each_plane(site, config_copy):
    """A new AIStor server pool appears as its own box over the hosts it adds; each plane names its pools."""
    pools = config_copy / "pools.yaml"
    pools.write_text(pools.read_text().replace("count: 30", "count: 34").replace("st{01..30}", "st{01..34}"))
    storage = config_copy / "storage.yaml"
    storage.write_text(
        storage.read_text().replace("    - servers: 30\n", "    - servers: 30\n    - servers: 4\n")
    )
    grown = load_site(config_copy)
    groups = _groups(site_svg(grown))
    assert "pool-0: 30 servers (st01..st30)" in _texts(groups["storage-pool-0"])
    assert "pool-1: 4 servers (st31..st34)" in _texts(groups["storage-pool-1"])
    assert any("EC:" in t for t in _texts(groups["storage-pool-1"]))
    assert "storage-pool-1" not in _groups(site_svg(site))
    planes = {
        " ".join(_texts(g)).split(":", 1)[0]: " ".join(_texts(g))
        for g in _groups(site_svg(site)).values()
        if g.get("class") == "plane"
    }
    rails = next(text for name, text in planes.items() if name.startswith("NDR"))
    assert rails.endswith("pools " + ", ".join(p for p in site.pools if p in site.fabric.nics))
    kubernetes = next(text for name, text in planes.items() if name.startswith("Kubernetes"))
    assert all(pool in kubernetes for pool in site.pools) and "PowerScale NFS" in kubernetes
