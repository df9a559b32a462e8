"""Platform services on the infra pool: observability, registry and AI serving (issue 7 invariants)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from sitegen.check.allowlists import allow_lists
from sitegen.check.placement import targeted_pools, tolerated_taints, workloads
from sitegen.compose.apps import variant_apps
from sitegen.compose.variant import synthesize
from sitegen.model import load_site, resolve

from .conftest import DIST, edit_yaml, invoke_sitegen

OBSERVABILITY = {
    "kube-prometheus-stack",
    "prometheus-smartctl-exporter",
    "otel-node",
    "opentelemetry-operator",
    "loki",
    "otel-gateway",
    "grafana",
    "observability",
}
SERVICES = OBSERVABILITY | {
    "cert-manager",
    "envoy-gateway",
    "gateway",
    "metrics-server",
    "coredns",
    "harbor",
    "harbor-config",
    "vllm-stack",
    "models",
}
# the only service workloads that run outside the system pool, and where
OFF_INFRA = {"models": "gpu"}


def _one(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return doc


def _app_of(doc) -> str:
    return doc.file.parts[3]


def _service_workloads(docs, site):
    """(workload, cluster layout) of every pod template the service apps render into dist/."""
    layouts = {v: resolve(site, v) for v in site.variants}
    allow = allow_lists(site)
    for doc in docs:
        if (
            doc.area != "apps"
            or _app_of(doc) not in SERVICES
            or "sitegen.io/partial" in str(doc.body["metadata"])
        ):
            continue
        cluster = next(c for c in layouts[doc.variant].clusters if c.name == doc.cluster)
        for w in workloads([doc], allow.agents_of(doc.variant, doc.cluster)):
            yield w, cluster


def test_every_service_workload_selects_the_system_pool(docs, site):
    """Every pod template the services render (Deployments, StatefulSets, cert and hook Jobs) lands
    on exactly the system pool: infra on the hub, the small control plane of the AIStor cluster."""
    seen = set()
    for w, cluster in _service_workloads(docs, site):
        if w.agent is not None:
            continue
        app = _app_of(w.doc)
        seen.add(app)
        pools = [p.name for p in targeted_pools(w.placement, cluster.pools)]
        expected = OFF_INFRA.get(app, cluster.system_pool.name)
        assert pools == [expected], f"{w.doc.file} {w.path}: {pools}"
    assert (
        SERVICES - {"observability", "gateway", "coredns", "otel-node", "prometheus-smartctl-exporter"}
        <= seen
    )


def test_node_agents_tolerate_exactly_every_pool_taint(docs, site):
    agents = {
        "kube-prometheus-stack": "prometheus-node-exporter",
        "prometheus-smartctl-exporter": "prometheus-smartctl-exporter",
        "otel-node": "otel-node-agent",
    }
    checked = 0
    for w, cluster in _service_workloads(docs, site):
        if w.kind != "DaemonSet" or _app_of(w.doc) not in agents:
            continue
        assert agents[_app_of(w.doc)] in w.doc.name, w.doc.file
        every_taint = {t for p in cluster.pools for t in p.taints}
        assert every_taint, "a cluster without taints would make this test vacuous"
        assert tolerated_taints(w.placement, cluster.pools) == every_taint
        assert targeted_pools(w.placement, cluster.pools) == list(cluster.pools)
        checked += 1
    assert checked == 3 * 3  # three agents in each of the three clusters


def test_inventory_lists_every_service_with_chart_and_version(site):
    result = invoke_sitegen("apps", "--dist", DIST, "--format", "json")
    assert result.exit_code == 0, result.stdout
    rows = {(r["variant"], r["application"]): r for r in json.loads(result.stdout)}
    for variant in site.variants:
        layout = resolve(site, variant)
        for cluster in layout.clusters:
            for app in variant_apps(site, layout).by_cluster[cluster.name]:
                if not app.chart_key:
                    continue
                pin = site.versions.charts[app.chart_key]
                row = rows[(variant, f"{cluster.name}-{app.name}")]
                element = DIST / variant / "apps" / cluster.name / app.name / "app.json"
                made_by = (
                    "root"
                    if cluster.name == layout.hub.name and app.name in ("cilium", "argo-cd")
                    else f"appset/{cluster.name}-wave-{json.loads(element.read_text())['wave']}-{app.project.name}"
                )
                assert (row["cluster"], row["made_by"], row["project"], row["namespace"]) == (
                    cluster.name,
                    made_by,
                    app.project.name,
                    app.namespace,
                ), row
                assert row["rendered_from"] == f"{pin.chart} {pin.version}", row
                assert row["source"] == f"dist/{variant}/apps/{cluster.name}/{app.name}", row


def test_chart_images_are_pinned_in_the_rendered_objects(tree, site):
    """Images a chart renders are judged like ours: on the object, whatever values produced them."""
    from .conftest import validate

    rel = "one-cluster/apps/ai/vllm-stack/vllm-router.deployment.vllm-stack-deployment-router.yaml"
    path = tree / rel
    router = site.versions.images["vllm-router"]
    text = path.read_text()
    assert f"image: {router.ref}" in text
    path.write_text(text.replace(router.ref, f"{router.repository}:latest"))
    result = validate(tree)
    assert f"{rel} [doc 0] Deployment vllm-router/vllm-stack-deployment-router: PIN-001" in result.stdout


def _values(variant: str, cluster: str, app: str) -> dict[str, Any]:
    return _one(DIST / variant / "values" / cluster / f"{app}.yaml")


def test_prometheus_is_ha_with_retention_and_storage_from_config(site):
    prom = site.services.monitoring.prometheus
    spec = _values("one-cluster", "ai", "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    assert spec["replicas"] == prom.replicas == 2 and spec["podAntiAffinity"] == "hard"
    assert spec["retention"] == f"{prom.retention_days}d"
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"]["requests"]["storage"] == f"{prom.volume_gb}G"
    assert claim["storageClassName"] == "local-nvme"
    # blocks stop at 85 % of the volume, computed, not typed
    assert spec["retentionSize"] == f"{int(prom.volume_gb * 0.85)}GB"
    assert spec["enableRemoteWriteReceiver"] is False
    assert _values("two-cluster", "ai", "kube-prometheus-stack")["prometheus"]["prometheusSpec"][
        "enableRemoteWriteReceiver"
    ]


def test_the_aistor_cluster_runs_agents_that_deliver_to_the_hub(site):
    values = _values("two-cluster", "aistor", "kube-prometheus-stack")
    assert values["prometheus"]["agentMode"] is True
    assert values["alertmanager"] == {"enabled": False} and values["defaultRules"] == {"create": False}
    (remote,) = values["prometheus"]["prometheusSpec"]["remoteWrite"]
    hostname = site.services.monitoring.telemetry_hostname
    assert remote["url"] == f"https://{hostname}/api/v1/write"
    assert values["prometheus"]["prometheusSpec"]["externalLabels"] == {"cluster": "aistor"}
    collector = _values("two-cluster", "aistor", "otel-node")
    assert collector["config"]["exporters"]["otlphttp"]["endpoint"] == f"https://{hostname}"
    # the Gateway's certificate is the site CA's: both agents trust it (the certificate, never the key)
    assert remote["tlsConfig"] == {"ca": {"secret": {"name": "site-ca-cert", "key": "tls.crt"}}}
    assert collector["config"]["exporters"]["otlphttp"]["tls"] == {"ca_file": "/etc/site-ca/tls.crt"}
    ca = _one(DIST / "two-cluster/apps/aistor/observability/monitoring.externalsecret.site-ca-cert.yaml")
    assert [d["remoteRef"]["property"] for d in ca["spec"]["data"]] == ["tls.crt"]
    # no duplicate control services there
    apps = {p.stem for p in (DIST / "two-cluster/values/aistor").glob("*.yaml")}
    assert not apps & {"grafana", "loki", "otel-gateway", "harbor", "argo-cd", "cert-manager", "vllm-stack"}
    # the hub lets exactly those two paths in, behind basic authentication
    route = _one(DIST / "two-cluster/apps/ai/gateway-routes/monitoring.httproute.telemetry.yaml")
    assert [r["matches"][0]["path"]["value"] for r in route["spec"]["rules"]] == ["/api/v1/write", "/v1/logs"]
    policy = _one(DIST / "two-cluster/apps/ai/gateway-routes/monitoring.securitypolicy.telemetry.yaml")
    assert policy["spec"]["targetRefs"][0]["name"] == "telemetry"
    assert not list((DIST / "one-cluster/apps/ai/gateway-routes").glob("*telemetry*"))


def _rules() -> dict[str, list[dict[str, Any]]]:
    doc = _one(DIST / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml")
    return {g["name"]: g["rules"] for g in doc["spec"]["groups"]}


def test_alerts_cover_the_sites_own_risks():
    alerts = {r["alert"] for rules in _rules().values() for r in rules}
    assert {
        "GpuXid",
        "GpuFatalXid",
        "NvmeWear",
        "AIStorDriveOffline",
        "NdrLinkDown",
        "EtcdDatabaseNearQuota",
    } <= alerts
    values = _values("one-cluster", "ai", "kube-prometheus-stack")
    assert values["kubeEtcd"]["enabled"] and values["defaultRules"]["create"]


def test_ndr_ports_that_keep_erring_are_reported_before_they_go_down():
    """A flapping, retraining or erring NDR port (node_exporter's infiniband counters a healthy link
    keeps at zero) warns per pool, on exactly the pool's rail devices: NdrLinkDown only sees it gone."""
    errors = [r for r in _rules()["site-fabric"] if r["alert"] == "NdrPortErrors"]
    counters = ("link_downed_total", "link_error_recovery_total", "port_errors_received_total")
    for pool, devices in (("gpu", "mlx5_0|mlx5_1|mlx5_2|mlx5_3"), ("storage", "mlx5_0|mlx5_1")):
        mine = [r["expr"] for r in errors if f'pool="{pool}"' in r["expr"]]
        assert sorted(mine) == sorted(
            f'increase(node_infiniband_{c}{{pool="{pool}", device=~"{devices}"}}[15m]) > 0' for c in counters
        )
    assert all(r["labels"]["severity"] == "warning" for r in errors)


def test_alert_thresholds_follow_the_model(config_copy):
    rules = _rules()
    # the hub of two clusters alerts on the AIStor cluster's series too (its agent writes them there)
    # (and on Argo CD's reach of its spokes and on their series arriving, which one cluster has not)
    two = _one(DIST / "two-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml")
    one = _one(DIST / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml")
    same = lambda groups: [{**g, "rules": [r for r in g["rules"] if r["alert"] != "ClusterMetricsAbsent"]}  # noqa: E731
                           for g in groups if g["name"] != "site-gitops"]  # fmt: skip
    assert same(two["spec"]["groups"]) == same(one["spec"]["groups"])
    missing = next(r for r in rules["site-gpu"] if r["alert"] == "GpuMissing")
    assert missing["expr"].endswith("< 8") and "gpu01|gpu02" in missing["expr"]
    parity = next(r for r in rules["site-storage"] if r["alert"] == "AIStorDrivesAtParity")
    assert parity["expr"] == "minio_cluster_drive_offline_total >= 4"
    ndr = [r for r in rules["site-fabric"] if r["alert"] == "NdrPortMissing"]
    assert [r["expr"].split("<")[1].strip() for r in ndr] == ["4", "2"]  # gpu, storage ports
    # another parity, and the 8-rail profile, move the alerts with them
    edit_yaml(config_copy, "storage.yaml", lambda d: d["aistor"].update(parity=3))
    for config, check in (
        (config_copy, lambda g: _alert(g, "site-storage", "AIStorDrivesAtParity").endswith(">= 3")),
        (
            config_copy / "examples/hgx-b300-8rail",
            lambda g: _alert(g, "site-fabric", "NdrPortMissing").endswith("< 8"),
        ),
    ):
        files = synthesize(load_site(config), ["one-cluster"])
        (doc,) = [f for f in files if f.path.name == "monitoring.prometheusrule.site.yaml"]
        assert check({g["name"]: g["rules"] for g in doc.documents[0]["spec"]["groups"]})


def _alert(groups: dict[str, list[dict[str, Any]]], group: str, name: str) -> str:
    return next(r["expr"] for r in groups[group] if r["alert"] == name)


def test_scrape_targets_dcgm_aistor_cilium_hubble():
    gpu = _values("one-cluster", "ai", "gpu-operator")
    assert gpu["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    store = _one(DIST / "one-cluster/apps/ai/aistor/aistor.objectstore.aistor.yaml")
    assert store["spec"]["prometheusOperator"] is True
    monitors = {
        p.name.split(".")[2]: _one(p)
        for p in (DIST / "one-cluster/apps/ai/observability").glob("*.podmonitor.*")
    }
    assert {m: d["spec"]["podMetricsEndpoints"][0]["port"] for m, d in monitors.items()} == {
        "cilium-agent": "prometheus",
        "hubble": "hubble-metrics",
        "cilium-operator": "prometheus",
        "external-secrets": "metrics",  # ExternalSecretNotReady
        "argocd-application-controller": "metrics",  # the GitOps alerts
        "argocd-applicationset-controller": "metrics",
        "cloudnative-pg": "metrics",  # the operator's
        "harbor-db": "metrics",  # the instances': replication, WAL archive, base backups
        "grafana-db": "metrics",
    }
    cilium = _values("one-cluster", "ai", "cilium")
    assert cilium["prometheus"]["enabled"] and cilium["operator"]["prometheus"]["enabled"]
    assert cilium["hubble"]["metrics"]["enabled"]
    # every selector of the chart is open, so these monitors are picked up
    spec = _values("one-cluster", "ai", "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    assert (
        spec["podMonitorSelectorNilUsesHelmValues"] is False
        and spec["ruleSelectorNilUsesHelmValues"] is False
    )


def test_node_series_carry_their_pool(site):
    exporter = _values("one-cluster", "ai", "kube-prometheus-stack")["prometheus-node-exporter"]
    monitor = exporter["prometheus"]["monitor"]
    assert monitor["attachMetadata"] == {"node": True}
    pools = {
        r["replacement"]: r["sourceLabels"][0] for r in monitor["relabelings"] if r["targetLabel"] == "pool"
    }
    assert pools["gpu"] == "__meta_kubernetes_node_labelpresent_node_role_kubernetes_io_gpu"
    assert set(pools) == set(site.pools)


def test_grafana_has_both_data_sources_and_the_repo_dashboards(site):
    values = _values("one-cluster", "ai", "grafana")
    sources = {d["uid"]: d["url"] for d in values["datasources"]["datasources.yaml"]["datasources"]}
    assert sources == {
        "prometheus": "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090",
        "loki": "http://loki-gateway.loki.svc.cluster.local",
    }
    assert values["admin"]["existingSecret"] == "grafana-admin"
    folder = DIST / "one-cluster/apps/ai/observability"
    for name, dashboard in site.dashboards.items():
        cm = _one(folder / f"grafana.configmap.dashboard-{name}.yaml")
        assert cm["metadata"]["labels"] == {"grafana_dashboard": "1"}
        assert json.loads(cm["data"][f"{name}.json"])["uid"] == dashboard.uid
    assert {"gpu", "aistor", "cluster"} <= set(site.dashboards)
    route = _one(DIST / "one-cluster/apps/ai/gateway-routes/grafana.httproute.grafana.yaml")
    assert route["spec"]["hostnames"] == [site.services.monitoring.grafana_hostname]


def test_loki_keeps_chunks_in_aistor_with_credentials_by_reference(site):
    one = _values("one-cluster", "ai", "loki")
    assert one["deploymentMode"] == "SimpleScalable"
    s3 = one["loki"]["storage"]["s3"]
    assert s3["endpoint"] == "minio.aistor.svc.cluster.local"
    assert s3["accessKeyId"] == "${AWS_ACCESS_KEY_ID}"  # expanded from the ExternalSecret, not a value
    assert one["loki"]["storage"]["bucketNames"]["chunks"] == site.services.logs.bucket
    assert one["write"]["extraEnvFrom"] == [{"secretRef": {"name": "loki-s3"}}]
    secret = _one(DIST / "one-cluster/apps/ai/observability/loki.externalsecret.loki-s3.yaml")
    assert secret["spec"]["secretStoreRef"]["kind"] == "SecretStore"  # loki's own namespace's
    # the AIStor cluster of its own is reached under its S3 name
    two = _values("two-cluster", "ai", "loki")["loki"]["storage"]["s3"]
    assert two["endpoint"] == site.storage.aistor.s3_hostname
    gateway = _values("one-cluster", "ai", "otel-gateway")
    assert (
        gateway["config"]["exporters"]["otlphttp/loki"]["endpoint"]
        == "http://loki-gateway.loki.svc.cluster.local/otlp"
    )


def test_harbor_stores_images_in_aistor_or_powerscale(config_copy, site):
    values = _values("one-cluster", "ai", "harbor")
    storage = values["persistence"]["imageChartStorage"]
    assert storage["type"] == "s3" and storage["s3"]["existingSecret"] == "harbor-s3"
    assert storage["s3"]["bucket"] == site.services.registry.bucket
    job = _one(DIST / "one-cluster/apps/ai/harbor-config/harbor.job.harbor-proxy-caches.yaml")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PROXY_CACHES"].splitlines() == [
        f"{name} {c.type} {c.url}" for name, c in sorted(site.services.registry.proxy_cache.items())
    ]
    edit_yaml(config_copy, "services.yaml", lambda d: d["registry"].update(storage="powerscale"))
    files = synthesize(load_site(config_copy), ["one-cluster"])
    (harbor,) = [f for f in files if f.path.name == "harbor.yaml"]
    persistence = harbor.documents[0]["persistence"]
    assert persistence["imageChartStorage"] == {"type": "filesystem"}
    assert persistence["persistentVolumeClaim"]["registry"]["storageClass"] == "archive"
    assert not [f for f in files if f.path.name == "harbor.externalsecret.harbor-s3.yaml"]


def test_model_servers_use_the_gpu_template_and_the_router_lists_every_replica(site):
    sts = _one(DIST / "one-cluster/apps/ai/models/ai-research.statefulset.llama-3-3-70b.yaml")
    pod = sts["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/gpu": "true"}
    (container,) = pod["containers"]
    gpus = site.hardware["dell-xe9780"].gpu.count
    assert container["resources"]["limits"]["nvidia.com/gpu"] == str(gpus)
    args = container["command"]
    assert args[args.index("--tensor-parallel-size") + 1] == str(gpus)
    assert re.fullmatch(r"vllm/vllm-openai:v\d+\.\d+\.\d+", container["image"])
    router = _values("one-cluster", "ai", "vllm-stack")["routerSpec"]
    assert router["tag"] != "latest" and router["serviceDiscovery"] == "static"
    replicas = sum(m.replicas for m in site.services.serving.models)
    assert len(router["staticBackends"].split(",")) == len(router["staticModels"].split(",")) == replicas
    route = _one(DIST / "one-cluster/apps/ai/gateway-routes/vllm-router.httproute.llm.yaml")
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "vllm-stack-router-service", "port": 80}]


def test_every_node_pulls_the_upstream_registries_through_harbor(site):
    import tomllib

    registry = site.services.registry
    folder = DIST / "one-cluster/containerd/certs.d"
    assert {p.name for p in folder.iterdir()} == {
        "docker.io",
        "ghcr.io",
        "nvcr.io",
        "quay.io",
        "registry.k8s.io",
    }
    for project, cache in registry.proxy_cache.items():
        name = "docker.io" if cache.type == "docker-hub" else cache.url.removeprefix("https://")
        hosts = tomllib.loads((folder / name / "hosts.toml").read_text())
        assert hosts["host"] == {
            f"https://{registry.hostname}/v2/{project}": {
                "capabilities": ["pull", "resolve"],
                "override_path": True,
                # private projects: the pull robot's credential, filled in on the host (RUNBOOK)
                "header": {"authorization": "Basic @HARBOR_PULL_AUTH@"},
            }
        }
        assert hosts["server"].startswith("https://")  # the upstream stays the fallback


def test_each_front_end_owns_its_listener(docs):
    """No listener takes routes from every namespace: a tenant could otherwise attach a route for
    grafana's or Argo CD's hostname under the site certificate."""
    for variant in ("one-cluster", "two-cluster"):
        (gateway,) = [d for d in docs if d.variant == variant and d.kind == "Gateway"]
        listeners = {entry["name"]: entry for entry in gateway.body["spec"]["listeners"]}
        routes = [
            d
            for d in docs
            if d.variant == variant and d.kind == "HTTPRoute" and d.name != "site-https-redirect"
        ]
        assert routes
        for route in routes:
            (parent,) = route.body["spec"]["parentRefs"]
            listener = listeners[parent["sectionName"]]
            assert listener["hostname"] in route.body["spec"]["hostnames"]
            allowed = listener["allowedRoutes"]["namespaces"]
            assert allowed == {
                "from": "Selector",
                "selector": {"matchLabels": {"kubernetes.io/metadata.name": route.namespace}},
            }
        assert all(entry["allowedRoutes"]["namespaces"]["from"] != "All" for entry in listeners.values())


def test_grafana_reads_dashboards_of_two_namespaces_not_every_secret(docs):
    grafana = [d for d in docs if d.file.as_posix().startswith("one-cluster/apps/ai/grafana/")]
    assert not [d for d in grafana if d.kind in ("ClusterRole", "ClusterRoleBinding")]
    (deployment,) = [d for d in grafana if d.kind == "Deployment"]
    env = {
        e["name"]: e.get("value")
        for c in deployment.body["spec"]["template"]["spec"]["containers"]
        for e in c.get("env") or []
        if c["name"] == "grafana-sc-dashboard"
    }
    assert env["NAMESPACE"] == "grafana,monitoring" and env["RESOURCE"] == "configmap"
    (reader,) = [
        d for d in docs if d.variant == "one-cluster" and d.kind == "Role" and d.name == "grafana-dashboards"
    ]
    assert reader.namespace == "monitoring"
    assert reader.body["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    ]


def test_the_llm_endpoint_requires_an_api_key():
    """The OpenAI-compatible API answers only requests carrying a client's key (x-api-key), the keys
    coming from the vault (one property per client) into the route's namespace."""
    gateway = DIST / "one-cluster/apps/ai/gateway-routes"
    policy = _one(gateway / "vllm-router.securitypolicy.llm.yaml")
    assert policy["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llm"}
    ]
    auth = policy["spec"]["apiKeyAuth"]
    assert auth == {"credentialRefs": [{"name": "llm-api-keys"}], "extractFrom": [{"headers": ["x-api-key"]}]}
    keys = _one(gateway / "vllm-router.externalsecret.llm-api-keys.yaml")
    assert keys["spec"]["target"]["name"] == "llm-api-keys"
    assert keys["spec"]["dataFrom"] == [{"extract": {"key": "serving/api-keys"}}]
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    assert (
        'path "secret/data/serving/api-keys"'
        in runbook.split("external-secrets-ai-vllm-router - <<'EOF'", 1)[1].split("EOF", 1)[0]
    )


def test_the_api_servers_audit_log_is_shipped_from_every_control_plane_node():
    """The path kube-apiserver writes (kubeadm) is the one the node collectors read, mount and send to
    the exporter that reaches the hub; and the collectors run on the control-plane nodes."""
    for variant in ("one-cluster", "two-cluster"):
        for init in (DIST / variant / "kubeadm").glob("*/init-*.yaml"):
            cluster = init.parent.name
            config = next(
                d for d in yaml.safe_load_all(init.read_text()) if d and d["kind"] == "ClusterConfiguration"
            )
            args = {a["name"]: a["value"] for a in config["apiServer"]["extraArgs"]}
            audit_dir = Path(args["audit-log-path"]).parent
            app = DIST / variant / "apps" / cluster / "otel-node"
            (cm,) = [
                d for p in app.glob("*.configmap.*.yaml") for d in yaml.safe_load_all(p.read_text()) if d
            ]
            relay = yaml.safe_load(cm["data"]["relay"])
            readers = [
                n for n, r in relay["receivers"].items() if f"{audit_dir}/*.log" in (r.get("include") or [])
            ]
            assert readers, (variant, cluster)
            shipping = [
                p for p in relay["service"]["pipelines"].values() if set(readers) & set(p["receivers"])
            ]
            assert shipping and all("otlphttp" in p["exporters"] for p in shipping)
            (ds,) = [
                d for p in app.glob("*.daemonset.*.yaml") for d in yaml.safe_load_all(p.read_text()) if d
            ]
            pod = ds["spec"]["template"]["spec"]
            mounted = {m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts") or []}
            assert str(audit_dir) in mounted
            assert any(t.get("operator") == "Exists" and "key" not in t for t in pod["tolerations"])
