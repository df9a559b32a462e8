"""Grafana signs in through the site's OIDC provider only: its login form and basic auth are off, its
roles come from the groups Argo CD's come from, anyone else is refused, and the client secret comes
from the vault (never from git)."""

from __future__ import annotations

import configparser

import yaml

from .conftest import DIST

APP = DIST / "one-cluster/apps/ai/grafana"


def _ini() -> configparser.ConfigParser:
    (doc,) = [d for d in yaml.safe_load_all((APP / "grafana.configmap.grafana.yaml").read_text()) if d]
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(doc["data"]["grafana.ini"])
    return ini


def test_grafana_has_no_local_login(site):
    ini = _ini()
    assert ini["auth"]["disable_login_form"] == "true"
    assert ini["auth.basic"]["enabled"] == "false"
    assert ini["auth.anonymous"]["enabled"] == "false"
    oauth = ini["auth.generic_oauth"]
    sso = site.services.monitoring.grafana_sso
    assert (oauth["enabled"], oauth["client_id"], oauth["token_url"]) == (
        "true",
        sso.client_id,
        sso.token_url,
    )
    assert oauth["role_attribute_strict"] == "true"  # no group of the site's: no login
    assert "client_secret" not in oauth  # from the environment, below


def test_grafana_roles_follow_the_argocd_groups_and_nobody_else(site):
    path = _ini()["auth.generic_oauth"]["role_attribute_path"]
    claim = site.gitops.argocd.sso.groups_claim
    for group, level in site.gitops.argocd.rbac.items():
        role = {"admin": "Admin", "readonly": "Viewer"}[level]
        assert f"contains({claim}[*], '{group}') && '{role}'" in path
    assert "Editor" not in path
    assert path.count("contains(") == len(site.gitops.argocd.rbac)  # no fallback role for the rest


def test_the_client_secret_comes_from_the_vault():
    (deployment,) = [
        d for d in yaml.safe_load_all((APP / "grafana.deployment.grafana.yaml").read_text()) if d
    ]
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "grafana"]
    env = {e["name"]: e for e in container.get("env") or []}
    ref = env["GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"]
    secret = yaml.safe_load(
        (DIST / f"one-cluster/apps/ai/observability/grafana.externalsecret.{ref['name']}.yaml")
        .read_text()
        .split("---", 1)[1]
    )
    (data,) = secret["spec"]["data"]
    assert data["secretKey"] == ref["key"] and data["remoteRef"]["key"] == "grafana/oidc"


def test_harbor_signs_in_through_the_site_provider(site):
    """Harbor's auth mode is OIDC from its first start (CONFIG_OVERWRITE_JSON, which core applies at
    every start): the site's issuer, Argo CD's admin group as Harbor's admins, the client secret filled
    from the vault by the ExternalSecret (a template field, never a value in git); the local admin
    stays for break-glass."""
    import json

    harbor = DIST / "one-cluster/apps/ai"
    (secret,) = yaml.safe_load_all(
        (harbor / "harbor-config/harbor.externalsecret.harbor-oidc.yaml").read_text()
    )
    assert [d["remoteRef"] for d in secret["spec"]["data"]] == [
        {"key": "harbor/oidc", "property": "client_secret"}
    ]
    settings = json.loads(secret["spec"]["target"]["template"]["data"]["CONFIG_OVERWRITE_JSON"])
    sso = site.gitops.argocd.sso
    assert settings["auth_mode"] == "oidc_auth" and settings["oidc_endpoint"] == sso.issuer
    assert settings["oidc_client_secret"] == "{{ .client_secret }}"
    assert site.gitops.argocd.rbac[settings["oidc_admin_group"]] == "admin"
    assert settings["oidc_groups_claim"] == sso.groups_claim and settings["oidc_verify_cert"] is True
    (core,) = [
        d for d in yaml.safe_load_all((harbor / "harbor/harbor.deployment.harbor-core.yaml").read_text()) if d
    ]
    env = {e["name"]: e for c in core["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    assert env["CONFIG_OVERWRITE_JSON"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["spec"]["target"]["name"], "key": "CONFIG_OVERWRITE_JSON",
    }  # fmt: skip
