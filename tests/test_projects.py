"""The reviewed list of projects that may create cluster-scoped RBAC (`sitegen projects`)."""

from __future__ import annotations

import json

import pytest
import yaml

from .conftest import DIST, invoke_sitegen, validate

pytestmark = pytest.mark.tree_variants("one-cluster")  # what these tests break is in one-cluster


def test_each_rbac_admitting_project_names_the_apps_that_need_it():
    result = invoke_sitegen("projects", "--dist", DIST, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and all(row["shipped_by"] != "NONE: not needed" for row in rows)
    one = {(r["project"], r["may_create"]): r["shipped_by"] for r in rows if r["variant"] == "one-cluster"}
    assert one[("networking", "ClusterRoleBinding (6 by name)")] == "ai-cilium (3), ai-network-operator (3)"
    assert not any(project == "tenants" for project, _ in one)  # tenants ship no cluster-scoped RBAC


def test_a_granted_kind_no_app_ships_is_flagged(tree):
    path = tree / "one-cluster/bootstrap/argocd.appproject.tenants.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["clusterResourceWhitelist"].append(
        {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"}
    )
    path.write_text(yaml.safe_dump(doc))
    result = invoke_sitegen("projects", "--dist", tree, "--format", "json")
    rows = [list(r.values()) for r in json.loads(result.stdout)]
    assert ["one-cluster", "tenants", "ClusterRoleBinding (ANY name)", "0", "NONE: not needed"] in rows


def test_a_cluster_role_binding_no_project_names_is_refused(tree):
    """A project admits cluster-scoped RBAC by name only: an app that adds a binding (to cluster-admin,
    under any name) is refused by its project, as Argo CD 3.4 matches the whitelist's names."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gpu-health-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "gpu-health"}],
    }
    (tree / "one-cluster/apps/ai/gpu-health/clusterrolebinding.gpu-health-admin.yaml").write_text(
        yaml.safe_dump(binding)
    )
    result = validate(tree)
    assert result.exit_code == 1
    assert "gpu does not admit cluster-scoped rbac.authorization.k8s.io/ClusterRoleBinding" in result.stdout


def test_a_project_admitting_any_cluster_role_binding_is_refused(tree):
    path = tree / "one-cluster/bootstrap/argocd.appproject.gpu.yaml"
    doc = yaml.safe_load(path.read_text())
    for entry in doc["spec"]["clusterResourceWhitelist"]:
        if entry["kind"] == "ClusterRoleBinding":
            entry.pop("name")
    path.write_text(yaml.safe_dump(doc))
    result = validate(tree)
    assert "admits every rbac.authorization.k8s.io/ClusterRoleBinding" in result.stdout


def test_argo_cd_refuses_a_binding_its_project_does_not_name(site, inputs):
    from .bringup_cases import ONE, blocked, edited, run

    def renamed(doc):
        doc["metadata"]["name"] = "gpu-node-guard-more"

    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/gpu-node-guard/clusterrolebinding.gpu-node-guard", renamed
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-gpu-node-guard",
        "cluster-scoped rbac.authorization.k8s.io/ClusterRoleBinding gpu-node-guard-more is not permitted in project gpu",
    )


@pytest.mark.parametrize(
    ("project", "group", "kind"),
    [("gpu", "apiextensions.k8s.io", "CustomResourceDefinition"), ("platform", "", "Namespace")],
)
def test_a_project_admitting_any_crd_or_namespace_is_refused(tree, project, group, kind):
    """A project admits the CRDs and Namespaces its apps render by name: one that admitted any could
    take over another app's CRD (a conversion webhook on every resource of the kind) or relabel another
    namespace (its Pod Security level, its Kueue management)."""
    path = tree / f"one-cluster/bootstrap/argocd.appproject.{project}.yaml"
    doc = yaml.safe_load(path.read_text())
    entries = [e for e in doc["spec"]["clusterResourceWhitelist"] if (e["group"], e["kind"]) == (group, kind)]
    assert entries and all(e.get("name") for e in entries)
    entries[0].pop("name")
    path.write_text(yaml.safe_dump(doc))
    assert f"admits every {group}/{kind}" in validate(tree).stdout


def test_argo_cd_refuses_a_crd_its_project_does_not_name(site, inputs):
    """A chart bump that ships another app's CRD under its own: Argo CD refuses the sync."""
    from .bringup_cases import ONE, blocked, edited, run

    def renamed(doc):
        doc["metadata"]["name"] = "clusterqueues-taken.kueue.x-k8s.io"

    tree = edited(
        inputs,
        ONE,
        "one-cluster/apps/ai/kueue/customresourcedefinition.clusterqueues.kueue.x-k8s.io",
        renamed,
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-kueue",
        "CustomResourceDefinition clusterqueues-taken.kueue.x-k8s.io is not permitted in project gpu",
    )
