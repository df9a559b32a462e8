"""S3 at the servers' speed in two clusters: every AIStor server has an address of its own, served on
that server (externalTrafficPolicy Local, announced by it or its neighbour), out of the general
load-balancer pool; S3-001 refuses the single address that sent all of S3 through one node; `plan`
shows the bandwidth each variant allows."""

from __future__ import annotations

import itertools
import json
from ipaddress import ip_address, ip_network

import yaml

from sitegen.report.plan import plan_json

from .conftest import DIST, validate

APP = "two-cluster/apps/aistor/aistor"


def _docs(docs, kind: str, cluster: str = "aistor"):
    return [d for d in docs if d.variant == "two-cluster" and d.cluster == cluster and d.kind == kind]


def test_every_storage_server_serves_s3_on_its_own_address(docs, site):
    hosts = [f"st{i:02d}" for i in range(1, site.pools[site.storage.aistor.pool].count + 1)]
    services = {d.name: d.body for d in _docs(docs, "Service") if d.name.startswith("s3-")}
    assert sorted(services) == [f"s3-{h}" for h in hosts]
    policies = {d.name: d.body["spec"] for d in _docs(docs, "CiliumL2AnnouncementPolicy")}
    (pool,) = [
        d.body["spec"] for d in _docs(docs, "CiliumLoadBalancerIPPool") if d.name == "aistor-s3-front-doors"
    ]
    (general,) = [
        d.body["spec"] for d in _docs(docs, "CiliumLoadBalancerIPPool") if d.name == "aistor-services"
    ]
    (block,) = pool["blocks"]
    (general_block,) = general["blocks"]
    cidr = ip_network(site.clusters["aistor"].load_balancer_cidr)
    addresses = set()
    for host in hosts:
        service = services[f"s3-{host}"]
        assert service["spec"]["externalTrafficPolicy"] == "Local"
        address = ip_address(service["metadata"]["annotations"]["lbipam.cilium.io/ips"])
        assert address in cidr and ip_address(block["start"]) <= address <= ip_address(block["stop"])
        assert address > ip_address(general_block["stop"])  # never handed to another Service
        addresses.add(address)
        (expr,) = policies[f"s3-{host}"]["nodeSelector"]["matchExpressions"]
        assert host in expr["values"] and len(expr["values"]) == 2  # the server, and a neighbour
    assert len(addresses) == len(hosts)
    # the general announcement leaves the front doors to their servers (not to the system pool)
    assert policies["aistor-services"]["serviceSelector"]["matchExpressions"][0]["operator"] == "DoesNotExist"
    # one cluster: consumers reach the in-cluster Service, no front doors
    assert not [
        d for d in docs if d.variant == "one-cluster" and d.kind == "Service" and d.name.startswith("s3-st")
    ]


def test_s3_through_one_address_is_refused(tree):
    for path in sorted((tree / APP).glob("aistor.service.s3-st*.yaml"))[1:]:
        path.unlink()
    result = validate(tree)
    assert result.exit_code == 1
    (found,) = [line for line in result.stdout.splitlines() if "S3-001" in line]
    assert "ObjectStore aistor/aistor" in found and "enters on 1 address(es) for 30 storage servers" in found


def test_a_front_door_served_from_any_node_is_refused(tree):
    path = tree / APP / "aistor.service.s3-st07.yaml"
    (service,) = yaml.safe_load_all(path.read_text())
    service["spec"]["externalTrafficPolicy"] = "Cluster"  # enters anywhere, crosses to a server: twice
    path.write_text(yaml.safe_dump(service))
    assert "enters on 29 address(es) for 30 storage servers" in validate(tree).stdout


def test_plan_shows_the_s3_bandwidth_of_each_variant(site):
    paths = {p["variant"]: p for p in json.loads(plan_json(site))["s3_paths"]}
    servers = site.pools[site.storage.aistor.pool].count
    per_server = site.hardware_of(site.storage.aistor.pool).ethernet_100g_ports * 100
    assert paths["two-cluster"]["entries"] == servers and paths["two-cluster"]["gbps"] == servers * per_server
    assert paths["one-cluster"]["path"].startswith("in-cluster")


def test_the_runbook_names_each_front_door_address_for_the_s3_name(docs, site):
    runbook = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    (line,) = [
        ln for ln in runbook.splitlines() if ln.startswith(f"- `{site.storage.aistor.s3_hostname}` -> ")
    ]
    addresses = sorted(
        ip_address(d.body["metadata"]["annotations"]["lbipam.cilium.io/ips"])
        for d in _docs(docs, "Service") if d.name.startswith("s3-st")
    )  # fmt: skip
    assert f"{addresses[0]} ... {addresses[-1]}" in line and "one A record per storage server" in line
    assert all(int(b) - int(a) == 1 for a, b in itertools.pairwise(addresses))
