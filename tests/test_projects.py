"""The reviewed list of projects that may create cluster-scoped RBAC (`sitegen projects`)."""

from __future__ import annotations

import json

import yaml

from .conftest import DIST, invoke_sitegen


def test_each_rbac_admitting_project_names_the_apps_that_need_it():
    result = invoke_sitegen("projects", "--dist", DIST, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and all(row["shipped_by"] != "NONE: not needed" for row in rows)
    one = {(r["project"], r["may_create"]): r["shipped_by"] for r in rows if r["variant"] == "one-cluster"}
    assert one[("networking", "ClusterRoleBinding")] == "ai-cilium (3), ai-network-operator (3)"
    assert ("tenants", "ClusterRoleBinding") not in one  # tenants ship no cluster-scoped RBAC


def test_a_granted_kind_no_app_ships_is_flagged(tree):
    path = tree / "one-cluster/bootstrap/argocd.appproject.tenants.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["clusterResourceWhitelist"].append(
        {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"}
    )
    path.write_text(yaml.safe_dump(doc))
    result = invoke_sitegen("projects", "--dist", tree)
    rows = [line.split(None, 4) for line in result.output.splitlines()[2:]]
    assert ["one-cluster", "tenants", "ClusterRoleBinding", "0", "NONE: not needed"] in rows
