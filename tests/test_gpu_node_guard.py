"""The GPU node guard's script, run with the host's sh and curl against a stand-in Prometheus and API
server that answer as the real ones do (Prometheus' instant-query JSON, Node objects, merge patches)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from constructs.gpu_node_guard import CORDON_LABEL, GUARD_SCRIPT
from constructs.node_faults import FATAL_XID, ROW_REMAP_FAILURE, FabricPool, cordon_conditions, ndr_link_down

pytestmark = pytest.mark.skipif(not shutil.which("curl"), reason="needs curl")

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]


class Site:
    """What the stand-ins know: the failing nodes per condition, the Nodes, and the requests."""

    def __init__(self, failing: dict[str, list[str]], cordoned: dict[str, str | None] | None = None) -> None:
        self.failing = failing
        self.nodes = {h: {"unschedulable": False, "labels": {}} for h in HOSTS}
        for host, label in (cordoned or {}).items():
            self.nodes[host]["unschedulable"] = True
            if label:
                self.nodes[host]["labels"][CORDON_LABEL] = label
        self.patches: list[tuple[str, dict]] = []
        self.prometheus_down = False


def _server(site: Site) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, status: int, body: dict) -> None:
            # kube-apiserver pretty-prints for curl (isPrettyPrint); Prometheus answers compact JSON
            api = self.path.startswith("/api/v1/nodes") and self.headers.get("User-Agent", "").startswith(
                "curl"
            )
            data = (
                json.dumps(body, indent=2) + "\n" if api else json.dumps(body, separators=(",", ":"))
            ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path == "/api/v1/query":
                if site.prometheus_down:
                    return self._send(503, {"status": "error"})
                query = parse_qs(url.query)["query"][0]
                reason = next(r for r, q in CONDITIONS.items() if q == query)
                result = [
                    {"metric": {"node": n}, "value": [1764806400, "1"]} for n in site.failing.get(reason, [])
                ]
                return self._send(
                    200, {"status": "success", "data": {"resultType": "vector", "result": result}}
                )
            if url.path == "/api/v1/nodes":
                assert "PartialObjectMetadataList" in self.headers["Accept"]
                key = parse_qs(url.query)["labelSelector"][0]
                items = [
                    {"metadata": {"name": n, "uid": f"uid-{n}", "labels": node["labels"]}}
                    for n, node in site.nodes.items()
                    if key in node["labels"]
                ]
                return self._send(200, {"kind": "PartialObjectMetadataList", "items": items})
            name = url.path.rsplit("/", 1)[1]
            node = site.nodes[name]
            spec = {"unschedulable": True} if node["unschedulable"] else {}
            return self._send(
                200, {"kind": "Node", "metadata": {"name": name, "labels": node["labels"]}, "spec": spec}
            )

        def do_PATCH(self) -> None:
            assert self.headers["Content-Type"] == "application/merge-patch+json"
            assert self.headers["Authorization"] == "Bearer token-of-the-guard"
            name = self.path.rsplit("/", 1)[1]
            patch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            site.patches.append((name, patch))
            site.nodes[name]["unschedulable"] = patch["spec"]["unschedulable"]
            site.nodes[name]["labels"].update(patch["metadata"]["labels"])
            self._send(200, {"kind": "Node"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


CONDITIONS = cordon_conditions((FabricPool("gpu", ("mlx5_0", "mlx5_1")),))


def guard(tmp_path: Path, site: Site, *, max_nodes: int = 2) -> subprocess.CompletedProcess[str]:
    server = _server(site)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        sa, conditions = tmp_path / "sa", tmp_path / "conditions"
        sa.mkdir(exist_ok=True)
        conditions.mkdir(exist_ok=True)
        (sa / "token").write_text("token-of-the-guard")
        (sa / "ca.crt").write_text("")
        for reason, query in CONDITIONS.items():
            (conditions / reason).write_text(query)
        script = tmp_path / "guard.sh"
        script.write_text(GUARD_SCRIPT)
        env = {
            "PATH": "/usr/bin:/bin", "SA": str(sa), "API": url, "PROMETHEUS": url,
            "HOSTS": " ".join(HOSTS), "MAX_NODES": str(max_nodes), "LABEL": CORDON_LABEL,
            "INTERVAL": "30", "CONDITIONS": str(conditions), "ALIVE": str(tmp_path / "alive"),
        }  # fmt: skip
        return subprocess.run(
            ["sh", str(script), "once"], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        server.shutdown()


def test_a_fatal_xid_and_a_link_down_cordon_their_nodes(tmp_path):
    site = Site({"gpu-fatal-xid": ["gpu03"], "ndr-link-down": ["gpu02", "gpu02"]})
    run = guard(tmp_path, site)
    assert run.returncode == 0, run.stderr
    patched = dict(site.patches)
    assert patched == {
        "gpu02": {"metadata": {"labels": {CORDON_LABEL: "ndr-link-down"}}, "spec": {"unschedulable": True}},
        "gpu03": {"metadata": {"labels": {CORDON_LABEL: "gpu-fatal-xid"}}, "spec": {"unschedulable": True}},
    }
    assert "cordoned gpu03: gpu-fatal-xid" in run.stdout
    assert (tmp_path / "alive").exists()
    # a second pass changes nothing: the nodes are cordoned already
    site.patches.clear()
    assert guard(tmp_path, site).returncode == 0
    assert site.patches == []


def test_the_guard_cordons_no_more_than_its_limit(tmp_path):
    site = Site({"gpu-row-remap-failure": ["gpu01"], "ndr-link-down": ["gpu02", "gpu03", "gpu04"]})
    run = guard(tmp_path, site, max_nodes=2)
    assert run.returncode == 0, run.stderr
    assert sorted(n for n, _ in site.patches) == ["gpu01", "gpu02"]
    assert "held back: gpu03 (ndr-link-down): 2 nodes already cordoned by the guard, at most 2" in run.stdout


def test_a_node_cordoned_by_a_person_is_left_as_it_is(tmp_path):
    """The API server pretty-prints for curl: the guard must still see the cordon, or it labels a
    person's cordons as its own and holds a failing node back once they fill its limit."""
    site = Site({"gpu-fatal-xid": ["gpu01"]}, cordoned={"gpu01": None})
    assert guard(tmp_path, site).returncode == 0
    assert site.patches == []
    site = Site(
        {"ndr-link-down": ["gpu01", "gpu02"], "gpu-fatal-xid": ["gpu03"]},
        cordoned={"gpu01": None, "gpu02": None},
    )
    run = guard(tmp_path, site, max_nodes=2)
    assert [n for n, _ in site.patches] == ["gpu03"], run.stdout


def test_only_the_clusters_gpu_hosts_are_cordoned(tmp_path):
    site = Site({"gpu-fatal-xid": ["cp01"]})
    run = guard(tmp_path, site)
    assert site.patches == []
    assert "ignored cp01: not a GPU host of this cluster" in run.stdout


def test_no_answer_from_prometheus_fails_the_pass_and_stales_the_probe(tmp_path):
    site = Site({"gpu-fatal-xid": ["gpu01"]})
    site.prometheus_down = True
    run = guard(tmp_path, site)
    assert run.returncode != 0
    assert "no answer from Prometheus for gpu-fatal-xid" in run.stdout
    assert not (tmp_path / "alive").exists()


def test_the_guard_acts_on_what_the_alerts_fire_on():
    pool = FabricPool("gpu", ("mlx5_0",))
    conditions = cordon_conditions((pool,))
    assert FATAL_XID in conditions["gpu-fatal-xid"]
    assert ROW_REMAP_FAILURE in conditions["gpu-row-remap-failure"]
    assert ndr_link_down(pool) in conditions["ndr-link-down"]
    for xid in (48, 79):
        assert f"DCGM_FI_DEV_XID_ERRORS == {xid}" in FATAL_XID
    # a row marked for remapping waits for the next reset; the GPU keeps and takes work meanwhile
    assert "DCGM_FI_DEV_XID_ERRORS == 63" not in FATAL_XID


def _one(docs, variant: str, kind: str, name: str):
    (found,) = [d for d in docs if d.variant == variant and d.kind == kind and d.name == name]
    return found.body


def test_the_guard_runs_on_the_system_pool_and_may_touch_nodes_only(docs, site):

    for variant in ("one-cluster", "two-cluster"):
        role = _one(docs, variant, "ClusterRole", "gpu-node-guard")
        assert role["rules"] == [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}
        ]
        pod = _one(docs, variant, "Deployment", "gpu-node-guard")["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"node-role.kubernetes.io/infra": "true"}
        (container,) = pod["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["HOSTS"].split() == [f"gpu{i:02d}" for i in range(1, 13)]
        assert env["MAX_NODES"] == str(site.services.health.auto_cordon_max_nodes)
        conditions = _one(docs, variant, "ConfigMap", "gpu-node-guard-conditions")["data"]
        assert set(conditions) == {"gpu-fatal-xid", "gpu-row-remap-failure", "ndr-link-down"}
        assert 'pool="gpu"' in conditions["ndr-link-down"] and "storage" not in conditions["ndr-link-down"]


def test_the_hub_alerts_when_the_guard_stops_or_is_outnumbered(docs, site):
    rules = {
        r["alert"]: r
        for g in _one(docs, "one-cluster", "PrometheusRule", "site")["spec"]["groups"]
        for r in g["rules"]
    }
    assert 'deployment="gpu-node-guard"' in rules["GpuNodeGuardDown"]["expr"]
    limit = rules["GpuNodesBrokenPastGuardLimit"]["expr"]
    assert limit.endswith(f"> {site.services.health.auto_cordon_max_nodes}")
    assert FATAL_XID in limit and ROW_REMAP_FAILURE in limit
    # the burn-in CronJobs are suspended templates: never stale
    assert "kube_cronjob_spec_suspend" in rules["GpuHealthCheckStale"]["expr"]


def test_guards_of_several_clusters_alert_once_each_counted_by_cluster():
    """The hub evaluates every cluster's series: one rule per alert, counting broken nodes per cluster
    (a spoke's series carry its external label), not one rule per guard that would fire twice."""
    from constructs.site_alerts import _guard_rules
    from constructs.site_watches import GuardWatch, SiteRisks

    def watch(pool: str) -> GuardWatch:
        conditions = cordon_conditions((FabricPool(pool, ("mlx5_0",)),))
        return GuardWatch("gpu-node-guard", "gpu-node-guard", 2, tuple(sorted(conditions.items())))

    risks = SiteRisks(
        gpus_per_node={}, fabric_pools=(), aistor_parity=None, guards=(watch("gpu"), watch("gpu-b"))
    )
    rules = {r["alert"]: r for r in _guard_rules(risks)}
    assert len(_guard_rules(risks)) == len(rules) == 2
    limit = rules["GpuNodesBrokenPastGuardLimit"]["expr"]
    assert limit.startswith("count by (cluster) (") and limit.endswith("> 2")
    assert 'pool="gpu"' in limit and 'pool="gpu-b"' in limit
    assert all(q.startswith("count by (cluster, node) (") for q in cordon_conditions(()).values())


def test_an_xid_alerts_when_it_happens(docs):
    """DCGM keeps the last Xid as the value: GpuXid fires on a change of it, not for as long as the
    exporter runs; GpuFatalXid stays on while the last code is fatal (the node awaits its repair)."""
    rule = next(
        r for d in docs if d.variant == "one-cluster" and d.kind == "PrometheusRule" and d.name == "site"
        for g in d.body["spec"]["groups"] for r in g["rules"] if r.get("alert") == "GpuXid"
    )  # fmt: skip
    assert rule["expr"] == "DCGM_FI_DEV_XID_ERRORS != 0 and changes(DCGM_FI_DEV_XID_ERRORS[15m]) > 0"


def test_bringup_runs_the_guard_as_shipped(site, inputs):
    """bringup's Xid scenario runs the shipped script against an API server that pretty-prints for
    curl, with two nodes cordoned by a person failing too: the guard's compact-JSON test put back
    labels them as its own and holds the failing node back."""
    from .bringup_cases import ONE, blocked, edited, run

    def compact(doc):
        doc["data"]["guard.sh"] = doc["data"]["guard.sh"].replace(
            " | tr -d ' \\t\\n' | grep -q", " | grep -q"
        )

    tree = edited(
        inputs,
        ONE,
        "one-cluster/apps/ai/gpu-node-guard/gpu-node-guard.configmap.gpu-node-guard-script",
        compact,
    )
    blocked(
        run(site, inputs, ONE, tree=tree), "reports Xid 79", "cordoned by a person, as its own", "held back"
    )
    text = "\n".join(e.what for e in run(site, inputs, ONE).timeline)
    assert (
        "gpu-node-guard cordoned gpu12 (gpu-fatal-xid), leaving gpu01, gpu02 (cordoned by a person)" in text
    )
