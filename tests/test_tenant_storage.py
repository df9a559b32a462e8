"""Object storage for tenants, from `tenants.yaml`: each tenant's buckets in AIStor with their quotas,
versions or expiry, a key whose policy reaches those buckets only, delivered into the tenant's
namespace through the vault; a tenant added in config gets all of it, and quotas beyond what AIStor
holds are a config error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from sitegen.model import load_site

from .conftest import DIST, edit_yaml, invoke_sitegen

VARIANTS = ["one-cluster", "two-cluster"]


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_tenant_has_its_buckets_quotas_and_a_key_of_its_own(site, variant):
    runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
    for tenant, spec in site.tenants.items():
        buckets = spec.buckets(tenant)
        for name, bucket in buckets.items():
            assert f"mc mb --ignore-existing site/{name}\n" in runbook
            assert f"mc quota set site/{name} --size {bucket.quota_tb}TB" in runbook
            if bucket.expire_days:
                assert f"mc ilm rule add --expire-days {bucket.expire_days} site/{name}" in runbook
            if bucket.versioning:
                assert f"mc version enable site/{name}" in runbook
        user = f"tenant-{tenant}"
        policy = json.loads((DIST / variant / f"bootstrap/s3-policies/{user}.json").read_text())
        resources = {r.split(":::")[1].split("/")[0] for s in policy["Statement"] for r in s["Resource"]}
        assert resources == set(buckets)  # its buckets, nothing else
        actions = {a for s in policy["Statement"] for a in s["Action"]}
        assert not actions & {"s3:DeleteObjectVersion", "s3:DeleteBucket", "s3:PutBucketPolicy"}
        assert re.search(rf"svcacct add site <root-user> --name {user} --policy \S+/{user}.json", runbook)
        assert f"vault kv put secret/aistor/users/{user} " in runbook
        app = next((DIST / variant / "apps").glob(f"*/tenant-{tenant}"))
        (secret,) = _docs(app / f"{tenant}.externalsecret.object-storage.yaml")
        assert {d["remoteRef"]["key"] for d in secret["spec"]["data"]} == {f"aistor/users/{user}"}
        (config,) = _docs(app / f"{tenant}.configmap.object-storage.yaml")
        assert config["data"]["BUCKETS"].split() == list(buckets)
        assert config["data"]["AWS_ENDPOINT_URL"].startswith("https://")
        assert (app / f"{tenant}.externalsecret.aistor-ca.yaml").is_file()
        policies = runbook[runbook.index("vault policy write external-secrets-") :]
        assert f'path "secret/data/aistor/users/{user}" {{ capabilities = ["read"] }}' in policies


def test_a_tenant_added_in_config_gets_buckets_key_and_quota(config_copy: Path, tmp_path: Path):
    def vision(tenants):
        tenants["vision"] = {
            "description": "computer vision",
            "quota": {"storage_gb": 1000, "volumes": 10},
            "object_storage": {"datasets": {"quota_tb": 300}},
        }

    edit_yaml(config_copy, "tenants.yaml", vision)
    out = tmp_path / "dist"
    result = invoke_sitegen("synth", "--config", config_copy, "--variant", "one-cluster", "--out", out)
    assert result.exit_code == 0, result.output
    runbook = (out / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    assert "mc quota set site/vision-datasets --size 300TB" in runbook
    assert "--name tenant-vision --policy" in runbook
    app = out / "one-cluster/apps/ai/tenant-vision"
    assert (app / "vision.externalsecret.object-storage.yaml").is_file()
    plan = invoke_sitegen("plan", "--config", config_copy)
    assert re.search(r"vision\s+vision-datasets\s+300", plan.output)


def test_quotas_beyond_what_aistor_holds_are_refused(config_copy: Path):
    site = load_site(config_copy)
    usable_tb = sum(x.usable_gb for x in site.aistor_layouts()) / 1000
    edit_yaml(
        config_copy,
        "tenants.yaml",
        lambda t: t["ai-research"]["object_storage"]["datasets"].update(quota_tb=int(usable_tb)),
    )
    result = invoke_sitegen("plan", "--config", config_copy)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "tenants.yaml: ai-research.object_storage: the tenants' bucket quotas add up to" in line


def test_a_tenant_without_object_storage_is_a_config_error(config_copy: Path):
    def without(tenants):
        del tenants["ai-research"]["object_storage"]

    edit_yaml(config_copy, "tenants.yaml", without)
    result = invoke_sitegen("plan", "--config", config_copy)
    assert result.exit_code == 2 and "ai-research.object_storage" in result.output
