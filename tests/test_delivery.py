"""Delivery: Argo CD values, AppProjects, ApplicationSets, the expander and the bootstrap runbook."""

from __future__ import annotations

import re

import pytest
import yaml

from sitegen.check.appsets import applications, dist_files
from sitegen.compose.apps import variant_apps
from sitegen.model import resolve
from sitegen.tree.documents import load_tree

from .conftest import DIST, add, invoke_sitegen, validate

VARIANTS = ("one-cluster", "two-cluster")


@pytest.fixture(scope="module")
def expected_apps(site):
    """What the registry composes, per variant: the ApplicationSets must expand to exactly these."""
    return {
        variant: {"root", "ai-argocd-access"}
        | {f"root-{spoke.name}" for spoke in resolve(site, variant).spokes}
        | {f"{ctx.cluster.name}-{c.name}" for ctx, c in variant_apps(site, resolve(site, variant)).members()}
        for variant in VARIANTS
    }


@pytest.fixture(scope="module")
def apps():
    found, errors = applications(load_tree(DIST), dist_files(DIST))
    assert errors == []
    return found


def _docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_inventory_lists_every_application(apps, expected_apps):
    assert {"ai-argo-cd", "ai-cilium", "aistor-cilium", "aistor-aistor"} <= expected_apps["two-cluster"]
    assert not any(a.startswith("aistor-") and "argo-cd" in a for a in expected_apps["two-cluster"])
    for variant, names in expected_apps.items():
        assert {a.name for a in apps if a.source.variant == variant} == names


def test_apps_command_prints_the_inventory(expected_apps, site):
    result = invoke_sitegen("apps", "--dist", DIST)
    assert result.exit_code == 0, result.stdout
    pin = site.versions.charts["argo-cd"]
    assert "ai-argo-cd" in result.stdout and f"{pin.chart} {pin.version}" in result.stdout
    assert result.stdout.strip().endswith(
        f"{sum(map(len, expected_apps.values()))} applications in 2 variants; 0 problems"
    )
    assert "ai-argocd-access" in result.stdout  # generated: the credentials and spoke registrations


def test_applications_follow_the_layers(apps):
    waves = {a.name: int(a.wave) for a in apps if a.source.variant == "one-cluster" and a.name != "root"}
    assert waves["ai-namespaces"] < waves["ai-cilium"] < waves["ai-node-labels"]
    assert waves["ai-cilium"] < waves["ai-argo-cd"]
    for app in apps:
        if app.name == "root":
            continue
        policy = app.spec["syncPolicy"]
        # every Application, the roots' own and the generated ones, syncs, prunes and heals by itself
        assert policy.get("automated") == {"prune": True, "selfHeal": True}
        assert policy["retry"]["backoff"]["factor"] == 2
        assert "ServerSideApply=true" in policy["syncOptions"]
        if not app.name.startswith("root-"):
            paths = app.body["metadata"]["annotations"]["argocd.argoproj.io/manifest-generate-paths"]
            assert paths.startswith("/dist/")


def test_every_application_is_a_directory_of_this_repo(apps, site):
    """No Application has a Helm source: what Argo CD applies is the files under dist/, nothing it
    fetches from a chart repository at sync time."""
    repo = site.gitops.repo_url
    for app in apps:
        for source in app.sources:
            assert "chart" not in source and "helm" not in source, app.name
            assert source["path"].startswith(f"dist/{app.source.variant}/"), app.name
            assert source["repoURL"] == repo
    chart_app = next(a for a in apps if a.name == "ai-argo-cd" and a.source.variant == "two-cluster")
    assert [s["path"] for s in chart_app.sources] == ["dist/two-cluster/apps/ai/argo-cd"]


def test_applicationsets_are_safe_by_construction():
    found = list(DIST.glob("*/bootstrap/**/*.applicationset.*.yaml"))
    assert len(found) > 20  # a set per cluster, wave and project
    for path in found:
        (appset,) = _docs(path)
        spec = appset["spec"]
        assert spec["goTemplate"] is True and spec["goTemplateOptions"] == ["missingkey=error"]
        # deleting a generated app (its element gone, the set renamed) leaves its objects; the project
        # is the set's own (APP-015), which APP-004 checks against what its apps render
        assert spec["syncPolicy"]["preserveResourcesOnDeletion"] is True
        project = spec["template"]["spec"]["project"]
        assert "{{" not in project and appset["metadata"]["labels"]["sitegen.io/project"] == project
        assert "strategy" not in spec


def test_default_project_is_locked_and_projects_are_narrow():
    for variant in VARIANTS:
        (default,) = _docs(DIST / variant / "bootstrap/argocd.appproject.default.yaml")
        assert default["spec"]["sourceRepos"] == [] and default["spec"]["destinations"] == []
        for path in (DIST / variant / "bootstrap").glob("argocd.appproject.*.yaml"):
            text = path.read_text()
            assert "'*'" not in text.replace("namespaceResourceBlacklist:\n  - group: '*'\n    kind: '*'", "")
    (nodes,) = _docs(DIST / "one-cluster/bootstrap/argocd.appproject.platform-nodes.yaml")
    # a Job labels the nodes, a controller approves their serving certificates, a CronJob snapshots
    # etcd with keys from the vault: the project may bind their ClusterRoles but never create a Node
    assert {k["kind"] for k in nodes["spec"]["clusterResourceWhitelist"]} == {
        "ClusterRole",
        "ClusterRoleBinding",
    }
    assert {k["kind"] for k in nodes["spec"]["namespaceResourceWhitelist"]} == {
        "ConfigMap",
        "ServiceAccount",
        "CronJob",
        "Deployment",
        "Role",
        "RoleBinding",
        "ExternalSecret",
    }
    (networking,) = _docs(DIST / "two-cluster/bootstrap/argocd.appproject.networking.yaml")
    assert networking["spec"]["sourceRepos"] == ["https://git.hpc.example.internal/platform/site-gitops.git"]
    # kinds derived from what the project's apps render: both lists, nothing more
    assert {"group": "", "kind": "Secret"} not in networking["spec"]["namespaceResourceWhitelist"]
    assert {"group": "apps", "kind": "DaemonSet"} in networking["spec"]["namespaceResourceWhitelist"]
    assert "namespaceResourceBlacklist" not in networking["spec"]
    assert {d["server"] for d in networking["spec"]["destinations"]} == {
        "https://kubernetes.default.svc",
        "https://api.aistor.hpc.example.internal:6443",
    }


def test_spoke_cluster_is_registered_without_secrets_in_git():
    (registration,) = _docs(
        DIST / "two-cluster/apps/ai/argocd-access/argocd.externalsecret.cluster-aistor.yaml"
    )
    labels = registration["spec"]["target"]["template"]["metadata"]["labels"]
    assert labels["argocd.argoproj.io/secret-type"] == "cluster" and labels["sitegen.io/cluster"] == "aistor"
    assert not list(DIST.glob("one-cluster/apps/*/*/*externalsecret.cluster-*"))
    assert not list(DIST.glob("*/*/*/*/*.secret.cluster-*"))  # the credential is the vault's only


def test_argocd_runs_highly_available_on_infra():
    (values,) = _docs(DIST / "one-cluster/values/ai/argo-cd.yaml")
    infra = {"node-role.kubernetes.io/infra": "true"}
    assert values["global"]["nodeSelector"] == infra
    assert values["redis-ha"]["enabled"]
    haproxy = _docs(DIST / "one-cluster/apps/ai/argo-cd/argocd.deployment.argo-cd-redis-ha-haproxy.yaml")[0]
    assert haproxy["spec"]["template"]["spec"]["nodeSelector"] == infra  # from global.nodeSelector
    assert min(values[c]["replicas"] for c in ("server", "repoServer", "applicationSet")) >= 2
    assert "Endpoints" in values["configs"]["cm"]["resource.exclusions"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_runbook_names_only_files_that_exist(variant):
    text = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
    # a path with a placeholder (`etcd-<member>.yaml`) names a file per host: the one of each host exists
    named = {
        m.group(0) for m in re.finditer(r"dist/[A-Za-z0-9_./-]+", text) if not text[m.end() :].startswith("<")
    }
    placeholders = re.findall(r"(dist/[A-Za-z0-9_./-]+)<(member|node)>([A-Za-z0-9_.-]*)", text)
    assert placeholders
    for head, _, tail in placeholders:
        assert list(DIST.parent.glob(f"{head}*{tail}")), head + "<...>" + tail
    assert len(named) > 10
    for rel in named:
        assert (DIST.parent / rel).exists(), rel


def test_runbook_order():
    text = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    order = [
        "kubeadm init",
        "join-control-plane-cp02",
        "join-control-plane-cp05",
        "join-gpu.yaml",
        "dist/two-cluster/apps/ai/cilium",
        "dist/two-cluster/apps/aistor/cilium",
        "vault write auth/kubernetes-aistor/role",
        "create token argocd-manager",  # the spoke's registration, in the vault before the root
        "dist/two-cluster/apps/ai/argo-cd",
        "application.root.yaml",
        "Once `aistor-aistor-volumemanager` is Healthy",
        "Once `aistor-aistor` is Healthy",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    steps = [int(n) for n in re.findall(r"^### (\d+)\.", text, flags=re.M)]
    assert steps == list(range(1, len(steps) + 1))


def test_expander_catches_a_removed_path(tree):
    for file in (tree / "one-cluster/apps/ai/node-labels").glob("*.yaml"):
        file.unlink()  # its element (app.json) stays: the app would prune everything
    result = validate(tree)
    assert result.exit_code == 1 and "APP-001 source-paths" in result.stdout
    assert (
        "argocd.applicationset.ai-wave-2-platform-nodes.yaml" in result.stdout
        and "ai-node-labels" in result.stdout
    )


def test_expander_catches_a_kind_outside_the_whitelist(tree):
    add(
        tree,
        "one-cluster/apps/ai/node-labels/storageclass.x.yaml",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "x"},
            "provisioner": "x",
        },
    )
    result = invoke_sitegen("apps", "--dist", tree)
    assert result.exit_code == 1
    assert "platform-nodes does not admit cluster-scoped storage.k8s.io/StorageClass" in result.stdout


def test_expander_catches_an_undeclared_destination(tree):
    path = tree / "two-cluster/apps/aistor/cilium/app.json"
    path.write_text(
        path.read_text().replace("https://api.aistor.hpc.example.internal:6443", "https://api.x:6443")
    )
    result = invoke_sitegen("apps", "--dist", tree)
    assert result.exit_code == 1 and "APP-003 destinations" in result.stdout


def test_each_namespace_reads_only_the_vault_keys_its_external_secrets_name(docs):
    text = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    policies = dict(re.findall(r"vault policy write (\S+) - <<'EOF'\n(.*?)\nEOF", text, flags=re.S))
    expected: dict[str, set[str]] = {}
    for d in docs:
        if d.variant == "two-cluster" and d.kind == "ExternalSecret":
            cluster = d.cluster or "ai"  # bootstrap/: the hub's
            keys = expected.setdefault(f"external-secrets-{cluster}-{d.namespace}", set())
            keys.update(item["remoteRef"]["key"] for item in d.body["spec"].get("data", []))
            keys.update(item["extract"]["key"] for item in d.body["spec"].get("dataFrom", []))
    assert {
        p: set(re.findall(r'path "secret/data/([^"]+)"', body)) for p, body in policies.items()
    } == expected
    readers = [p for p, keys in expected.items() if "pki/issuing-ca" in keys]
    assert readers == ["external-secrets-ai-cert-manager"]  # the CA's private key: cert-manager only
    assert not [p for p, keys in expected.items() if "pki/site-ca" in keys]  # the root's: nobody
    for cluster in ("ai", "aistor"):
        assert f"vault auth enable -path=kubernetes-{cluster} kubernetes" in text
    assert (
        "vault write auth/kubernetes-ai/role/external-secrets-ai-research bound_service_account_names=vault-reader "
        "bound_service_account_namespaces=ai-research audience=vault policies=external-secrets-ai-ai-research "
        "ttl=1h"
    ) in text


def test_each_worker_pool_joins_with_a_fresh_bootstrap_token():
    """The init token lives two hours; ~97 joins take longer: each pool gets its own before joining."""
    text = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    sections = re.split(r"^### \d+\. ", text, flags=re.M)
    joins = [s for s in sections if s.startswith("Worker join: pool ")]
    assert len(joins) == 4
    for section in joins:
        pool = section.split()[3]
        assert section.index(
            f"kubeadm token create --ttl 2h --description 'join pool {pool}'"
        ) < section.index("kubeadm join")


def test_a_project_admitting_a_cluster_role_binding_it_does_not_ship(tree):
    path = tree / "one-cluster/bootstrap/argocd.appproject.tenants.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["clusterResourceWhitelist"].append(
        {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"}
    )
    path.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert result.exit_code == 1
    assert "APP-005 project-least-privilege" in result.stdout
    assert (
        "admits cluster-scoped rbac.authorization.k8s.io/ClusterRoleBinding, which none of its apps render"
        in result.stdout
    )


def _expand(ellipsis: str) -> list[str]:
    """DirectPV's ellipsis notation, as its plugin expands it (`st{01...03}`: st01, st02, st03)."""
    found = re.fullmatch(r"(.*)\{(\d+)\.\.\.(\d+)\}(.*)", ellipsis)
    if not found:
        return ellipsis.split(",")
    prefix, first, last, suffix = found.groups()
    return [f"{prefix}{n:0{len(first)}d}{suffix}" for n in range(int(first), int(last) + 1)]


def test_directpv_discovers_every_storage_host_and_the_plugin_is_checked(site):
    """The drives step names the storage pool's hosts (not `st01,...`), and checks the plugin first."""
    text = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    (nodes,) = re.findall(r"kubectl directpv discover --nodes '([^']+)'", text)
    assert _expand(nodes) == [h.name for h in site.pools[site.storage.aistor.pool].hosts]
    assert text.index("kubectl directpv --version") < text.index("kubectl directpv discover")


def test_node_lists_use_the_ellipsis_only_for_one_numbered_run():
    from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager

    directpv_nodes = AIStorVolumeManager.directpv_nodes
    assert directpv_nodes(["st01", "st02", "st03"]) == "st{01...03}"
    assert directpv_nodes(["st01", "st03"]) == "st01,st03"  # a gap: listed
    assert directpv_nodes(["a1", "b2"]) == "a1,b2"
    assert directpv_nodes(["st9", "st10"]) == "st9,st10"  # widths differ: listed


def test_a_replaced_server_keeps_its_drives():
    """Re-initializing the drives moved from a failed chassis would erase a whole server's share of
    every erasure set and heal it over the network; the day-2 step says not to."""
    text = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    server = text[text.index("A whole server:") :]
    server = server[: server.index("A server pool is never")]
    assert "do not initialize them" in server and "Ready again" in server
    assert "initialize its drives" not in server


def test_the_runbook_starts_with_what_must_exist_outside(site):
    """The DNS names every later step relies on, and the outside systems' prerequisites, up front."""
    text = (DIST / "two-cluster/bootstrap/RUNBOOK.md").read_text()
    before = text[text.index("## Before you start") : text.index("### 1.")]
    for cluster in site.clusters.values():
        assert f"`{cluster.api.dns_name}` -> {cluster.api.vip}" in before
    gateway = site.services.gateway.address
    assert f"`{site.gitops.argocd.hostname}` -> {gateway}" in before
    assert f"`{site.services.registry.hostname}` -> {gateway}" in before
    assert f"`{site.storage.aistor.s3_hostname}`" in before
    assert "SmartQuotas" in before and "subnet manager" in before
    # the tenants' backups take CSI snapshots through the VolumeSnapshotClass dist/ holds: SnapshotIQ too
    assert list(DIST.glob("two-cluster/apps/ai/powerscale/volumesnapshotclass.*.yaml"))
    assert "SnapshotIQ (the tenants' nightly backups take CSI snapshots" in before
    assert "none is generated" not in before
