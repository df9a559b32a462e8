"""The roles that read every Secret, grant beyond their rules or gather other roles' are reviewed by the
component that renders them (`Component.reviewed_roles`), and the RBAC admission policies of a cluster
let through the reviewed roles its components render there, and no other."""

from __future__ import annotations

from dataclasses import replace

import pytest

from constructs import Construct
from sitegen.components.base import Layer, Project, RenderedComponent
from sitegen.components.catalog import COMPONENTS
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.cert_manager import CertManager
from sitegen.components.gpu.kueue import Kueue
from sitegen.components.platform.admission_policies import cluster_admin_accounts, reviewed_roles
from sitegen.components.privilege import (
    AGGREGATES_ROLES,
    GRANTS_ANY_ROLE,
    READS_SECRETS,
    RoleReview,
)
from sitegen.components.storage.velero import Velero
from sitegen.compose.apps import variant_apps
from sitegen.model import resolve
from sitegen.tree.documents import load_tree

from .conftest import DIST

DEMO = Project("demo", "test components")


class Vaultish(RenderedComponent):
    """A component whose own ClusterRole reads every Secret."""

    name = "vaultish"
    project = DEMO
    layer = Layer.SERVICES
    namespace = "vaultish"

    def reviewed_roles(self, scope: ClusterScope) -> dict[str, RoleReview]:
        return {"vaultish-reader": RoleReview((READS_SECRETS,), "syncs every Secret to the vault")}

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        pass


def _contexts(site, registry=COMPONENTS):
    return [
        ctx
        for variant in site.variants
        for ctx in variant_apps(site, resolve(site, variant), registry).contexts
    ]


def _reads_every_secret(rule: dict) -> bool:
    return (
        not rule.get("resourceNames")
        and bool({"", "*"} & set(rule.get("apiGroups") or []))
        and bool({"secrets", "*"} & set(rule.get("resources") or []))
        and bool({"get", "list", "watch", "*"} & set(rule.get("verbs") or []))
    )


def test_the_reviewed_secret_readers_are_the_ones_rendered(site):
    """Each reviewed ClusterRole is one the site renders (a stale entry would let a new role of that
    name through unreviewed), and each rendered reader is reviewed by its component."""
    rendered = {
        d.name
        for d in load_tree(DIST)
        if d.kind == "ClusterRole" and any(_reads_every_secret(r) for r in d.body.get("rules") or [])
    }
    reviewed = set().union(*(reviewed_roles(ctx, READS_SECRETS) for ctx in _contexts(site)))
    assert rendered == reviewed
    assert "kube-prometheus-stack-kube-state-metrics" not in rendered  # its Secrets collector is off


def test_each_reviewed_role_is_its_components_own(site):
    ai = next(ctx for ctx in _contexts(site) if ctx.cluster.name == "ai")
    assert {n for n in reviewed_roles(ai, READS_SECRETS) if n.startswith("cert-manager")} == set(
        ai.get(CertManager).reviewed_roles(ai)
    )
    assert reviewed_roles(ai, GRANTS_ANY_ROLE) >= set(ai.get(Velero).reviewed_roles(ai))
    assert reviewed_roles(ai, AGGREGATES_ROLES) == set(ai.get(Kueue).reviewed_roles(ai))
    assert not reviewed_roles(ai, AGGREGATES_ROLES) & reviewed_roles(ai, READS_SECRETS)


def test_a_new_components_role_is_reviewed_where_it_runs_and_gone_with_it(site):
    with_it = _contexts(site, (*COMPONENTS, Vaultish))
    assert all("vaultish-reader" in reviewed_roles(ctx, READS_SECRETS) for ctx in with_it)
    assert not any("vaultish-reader" in reviewed_roles(ctx, READS_SECRETS) for ctx in _contexts(site))


def test_a_review_names_what_the_role_does():
    with pytest.raises(ValueError, match="a reviewed role does some of"):
        RoleReview(("creates pods",), "not a role power")
    with pytest.raises(ValueError):
        RoleReview((), "does nothing")


class AdminBinder(Vaultish):
    """The same, with a binding of cluster-admin of its own."""

    def admin_bindings(self, scope: ClusterScope) -> dict[str, str]:
        return {"vaultish-admin": "restores anything anywhere"}


def test_a_binding_of_cluster_admin_is_reviewed_by_its_component(site):
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "vaultish-admin"},
        "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "namespace": "vaultish", "name": "vaultish"}],
    }
    for registry, reviewed in (((*COMPONENTS, AdminBinder), True), ((*COMPONENTS, Vaultish), False)):
        ai = next(ctx for ctx in _contexts(site, registry) if ctx.cluster.name == "ai")
        found = cluster_admin_accounts(replace(ai, rendered={**ai.rendered, "vaultish": [binding]}))
        assert (("ClusterRoleBinding", "", "vaultish-admin") in found) is reviewed
        if reviewed:
            assert found[("ClusterRoleBinding", "", "vaultish-admin")] == ["vaultish/vaultish"]
