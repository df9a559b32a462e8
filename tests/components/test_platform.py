"""Platform components: node labels, namespaces, Argo CD, External Secrets and the store, metrics-server, CoreDNS."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cdk8s import App

from sitegen.check.placement import targeted_pools, workloads
from sitegen.components.base import NamespaceSecurity, RenderedComponent
from sitegen.components.platform.argo_cd import ArgoCd
from sitegen.components.platform.argocd_manager import ArgocdManager
from sitegen.components.platform.coredns import CoreDns
from sitegen.components.platform.external_secrets import ExternalSecrets
from sitegen.components.platform.metrics_server import MetricsServer
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.platform_nodes.node_labels import NodeLabels
from sitegen.model import resolve

from .conftest import by_kind, context, output, render

INFRA = {"node-role.kubernetes.io/infra": "true"}


def test_node_labels_list_every_host_of_the_cluster_once(one, two, small):
    (listing,) = by_kind(render(one, "ai", NodeLabels), "ConfigMap")
    hosts = [line.split(" ")[0] for line in listing["data"]["nodes.txt"].splitlines()]
    assert sorted(hosts) == sorted(h.name for p in small.pools.values() for h in p.hosts)
    (aistor,) = by_kind(render(two, "aistor", NodeLabels), "ConfigMap")
    ai = by_kind(render(two, "ai", NodeLabels), "ConfigMap")[0]
    on_aistor = {line.split(" ")[0] for line in aistor["data"]["nodes.txt"].splitlines()}
    assert not on_aistor & {line.split(" ")[0] for line in ai["data"]["nodes.txt"].splitlines()}
    (job,) = by_kind(render(one, "ai", NodeLabels), "CronJob")
    assert job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["nodeSelector"] == INFRA


def test_namespaces_are_those_components_declare_with_their_level(one):
    ctx = context(one, "ai")
    declared = {c.namespace: c.security for c in ctx.components if c.security is not None}
    namespaces = {
        n["metadata"]["name"]: n["metadata"]["labels"]
        for n in render(one, "ai", Namespaces)
        if n["kind"] == "Namespace"
    }
    assert set(namespaces) == set(declared)
    for name, security in declared.items():
        assert isinstance(security, NamespaceSecurity)
        assert namespaces[name]["pod-security.kubernetes.io/enforce"] == security.level
        assert namespaces[name]["pod-security.kubernetes.io/enforce-version"] == "v1.35"


def test_argo_cd_runs_one_controller_shard_per_cluster_on_infra(one, two, small):
    for apps, clusters in ((one, 1), (two, 2)):
        values = render(apps, "ai", ArgoCd)
        assert values["controller"]["replicas"] == clusters
        assert values["global"]["nodeSelector"] == INFRA
    # every app is a directory of dist/: Argo CD needs no chart repository, OCI or HTTP
    assert "repositories" not in render(one, "ai", ArgoCd).get("configs", {})


def test_argo_cd_only_on_the_hub(two):
    assert context(two, "ai").has(ArgoCd) and not context(two, "aistor").has(ArgoCd)


def test_external_secrets_pods_all_on_the_system_pool(docs, site):
    """Read from the hydrated chart: controller, webhook, cert controller and any hook Job."""
    checked = 0
    for variant, cluster in (("one-cluster", "ai"), ("two-cluster", "aistor")):
        layout = next(c for c in resolve(site, variant).clusters if c.name == cluster)
        folder = f"{variant}/apps/{cluster}/{ExternalSecrets.name}/"
        for w in workloads([d for d in docs if d.file.as_posix().startswith(folder)], {}):
            assert targeted_pools(w.placement, layout.pools) == [layout.system_pool], w.doc.file
            checked += 1
    assert checked >= 2 * 3


def test_a_secret_store_per_namespace_with_its_own_role(two, small):
    """Each namespace with ExternalSecrets (and Argo CD's on the hub) reads the vault through its own
    store, as its own role on its cluster's auth mount: none is shared."""
    for cluster in ("ai", "aistor"):
        docs = render(two, cluster, SecretStore)
        stores = by_kind(docs, "SecretStore")
        users = {
            d["metadata"]["namespace"]
            for c in context(two, cluster).components
            if isinstance(c, RenderedComponent) and not c.reads_rendered
            for d in output(context(two, cluster), c)
            if d["kind"] == "ExternalSecret"
        }
        if cluster == "ai":
            users.add(small.gitops.argocd.namespace)
        assert sorted(s["metadata"]["namespace"] for s in stores) == sorted(users)
        for store in stores:
            ns = store["metadata"]["namespace"]
            auth = store["spec"]["provider"]["vault"]["auth"]["kubernetes"]
            assert auth == {
                "mountPath": f"{small.secrets.vault.auth_mount}-{cluster}",
                "role": f"{small.secrets.vault.role}-{ns}",
                # a token for the vault (its roles' audience) and the API server (which reviews it)
                "serviceAccountRef": {
                    "name": "vault-reader",
                    "audiences": ["https://kubernetes.default.svc.cluster.local", "vault"],
                },
            }
        assert {
            (d["metadata"]["namespace"], d["metadata"]["name"]) for d in by_kind(docs, "ServiceAccount")
        } == {(ns, "vault-reader") for ns in users}


def test_metrics_server_and_coredns_on_infra(one):
    assert render(one, "ai", MetricsServer)["nodeSelector"] == INFRA
    (coredns,) = render(one, "ai", CoreDns)
    assert coredns["metadata"]["annotations"]["sitegen.io/partial"] == "true"
    assert coredns["spec"]["template"]["spec"]["nodeSelector"] == INFRA


def test_coredns_tolerates_the_control_plane_where_that_is_the_system_pool(one, two):
    """On the AIStor cluster the system pool is the control plane: without its toleration CoreDNS
    could not schedule (PLC-006 found it). On the AI cluster the system pool is the tainted infra pool."""
    (aistor,) = render(two, "aistor", CoreDns)
    spec = aistor["spec"]["template"]["spec"]
    assert spec["tolerations"] == list(context(two, "aistor").system_placement.tolerations)
    assert any(t["key"] == "node-role.kubernetes.io/control-plane" for t in spec["tolerations"])
    (ai,) = render(one, "ai", CoreDns)
    assert ai["spec"]["template"]["spec"]["tolerations"] == list(
        context(one, "ai").system_placement.tolerations
    )


def test_argo_cd_signs_in_only_through_sso_with_rbac_from_config(one, small):
    configs = render(one, "ai", ArgoCd)["configs"]
    argocd = small.gitops.argocd
    assert configs["cm"]["admin.enabled"] == "false"
    oidc = yaml.safe_load(configs["cm"]["oidc.config"])
    assert oidc["issuer"] == argocd.sso.issuer and oidc["clientID"] == argocd.sso.client_id
    assert oidc["clientSecret"] == "$argocd-oidc:clientSecret"  # a Secret the root writes from the vault
    assert configs["rbac"]["policy.default"] == ""  # signed in, but in no group: nothing
    assert configs["rbac"]["policy.csv"].splitlines() == [
        f"g, {group}, role:{role}" for group, role in sorted(argocd.rbac.items())
    ]


def test_signed_commits_only_when_keys_are_configured(small):
    from sitegen.compose.apps import variant_apps
    from sitegen.compose.charts import ObjectChart
    from sitegen.compose.delivery import bootstrap

    key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBGV...\n-----END PGP PUBLIC KEY BLOCK-----\n"
    signed = small.model_copy(
        update={"gitops": small.gitops.model_copy(update={"signature_keys": {"0123456789ABCDEF": key}})}
    )
    apps = variant_apps(signed, resolve(signed, "one-cluster"))
    assert render(apps, "ai", ArgoCd)["configs"]["gpg"]["keys"] == {"0123456789ABCDEF": key}
    documents = {(ctx.cluster.name, c.name): [] for ctx, c in apps.members()}
    app = App()
    chart = ObjectChart(app, "bootstrap", folder=Path("bootstrap"))
    bootstrap(chart, {}, ObjectChart(app, "access", folder=Path("access")), apps, documents)
    projects = [
        d
        for d in chart.documents
        if d["kind"] == "AppProject" and d["metadata"]["name"] not in ("default", "bootstrap")
    ]
    assert projects and all(p["spec"]["signatureKeys"] == [{"keyID": "0123456789ABCDEF"}] for p in projects)
    unsigned = render(variant_apps(small, resolve(small, "one-cluster")), "ai", ArgoCd)["configs"]["gpg"][
        "keys"
    ]
    assert unsigned == {}


def test_tenants_may_tolerate_the_gpu_taint_and_nothing_else(one):
    """The namespaces Kueue queues GPU jobs in (the tenants', the health checks') and no other."""
    docs = render(one, "ai", Namespaces)
    ctx = context(one, "ai")
    queued = {c.namespace for c in ctx.components if c.queued}
    assert set(ctx.site.tenants) < queued
    for doc in by_kind(docs, "Namespace"):
        raw = (doc["metadata"].get("annotations") or {}).get(
            "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
        )
        tenant = doc["metadata"]["name"] in queued
        assert (raw is not None) == tenant, doc["metadata"]["name"]
        if tenant:
            allowed = json.loads(raw)
            gpu = [dict(t) for p in ctx.gpu_pools for t in p.placement.tolerations]
            assert allowed[: len(gpu)] == gpu
            cordon = (
                {"node.kubernetes.io/unschedulable"} if doc["metadata"]["name"] == "gpu-health" else set()
            )
            assert {a["key"] for a in allowed[len(gpu) :]} == {
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
                "node.kubernetes.io/memory-pressure",  # PodTolerationRestriction's own, on non-BestEffort pods
                *cordon,  # the burn-in runs on its cordoned node; no tenant's pod may
            }


def test_a_tenant_namespace_comes_with_its_quota(one, site):
    """Created with the namespace (a quota does not evict pods it finds); GPUs are every GPU of the
    cluster unless config narrows them; no LoadBalancer or NodePort Service."""
    quotas = {
        q["metadata"]["namespace"]: q for q in render(one, "ai", Namespaces) if q["kind"] == "ResourceQuota"
    }
    assert set(quotas) == set(site.tenants)
    hard = quotas["ai-research"]["spec"]["hard"]
    gpus = sum(len(p.hosts) * p.hardware.gpu.count for p in context(one, "ai").gpu_pools)
    assert gpus and hard["requests.nvidia.com/gpu"] == str(gpus)
    assert hard["services.loadbalancers"] == hard["services.nodeports"] == "0"
    assert hard["requests.storage"] == f"{site.tenants['ai-research'].quota.storage_gb}G"


def test_a_spoke_is_managed_by_the_kinds_its_apps_render_not_cluster_admin(two):
    """Only on spokes; no wildcard; the stores and policies other readers render are among the kinds."""
    assert not context(two, "ai").has(ArgocdManager)
    (role,) = by_kind(render(two, "aistor", ArgocdManager), "ClusterRole")
    rules = role["rules"]
    assert all("*" not in r["apiGroups"] + r["resources"] + r["verbs"] for r in rules)
    managed = {
        (g, res) for r in rules if "create" in r["verbs"] for g in r["apiGroups"] for res in r["resources"]
    }
    assert {("external-secrets.io", "secretstores"), ("cilium.io", "ciliumnetworkpolicies")} <= managed
    assert ("", "pods") not in managed and ("", "nodes") not in managed  # pods are read, never written
