"""Storage tiers: AIStor on the storage pool, PowerScale CSI, the local NVMe cache, External Secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sitegen.check.allowlists import allow_lists
from sitegen.check.placement import targeted_pools, tolerated_taints, workloads
from sitegen.compose.variant import synthesize
from sitegen.model import load_site, resolve

from .conftest import DIST, edit_yaml

AISTOR_TAINT = {"key": "dedicated", "operator": "Equal", "value": "aistor", "effect": "NoSchedule"}


def _one(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return doc


def _object_store(variant: str = "one-cluster", cluster: str = "ai") -> dict[str, Any]:
    return _one(DIST / variant / f"apps/{cluster}/aistor/aistor.objectstore.aistor.yaml")


def test_usable_capacity_follows_the_erasure_layout(site):
    layout = site.aistor_layout()
    assert (layout.sets, layout.set_size, layout.parity) == (48, 15, 4)
    assert layout.raw_gb == 22_118_400 and layout.usable_gb == 16_220_160  # 16.22 PB of 22.12 PB
    table = {(a.set_size, a.parity): round(a.usable_gb / 1e6, 2) for a in site.aistor_alternatives()}
    assert (
        table[(15, 3)] == 17.69
        and table[(16, 4)] == 16.59
        and table[(24, 4)] == 18.43
        and table[(12, 4)] == 14.75
    )


def test_object_store_pool_is_sized_from_the_site(site):
    spec = _object_store()["spec"]
    (pool,) = spec["pools"]
    assert (pool["servers"], pool["volumesPerServer"]) == (30, 24)
    assert pool["nodeSelector"] == {"node-role.kubernetes.io/aistor": "true"} and pool["tolerations"] == [
        AISTOR_TAINT
    ]
    assert pool["volumeClaimTemplate"]["spec"]["storageClassName"] == "directpv-min-io"
    # requests above half a node: two servers can never share one
    assert int(pool["resources"]["requests"]["cpu"]) * 2 > site.hardware["lenovo-sr650-v4"].cpu_cores
    assert {"name": "MINIO_STORAGE_CLASS_STANDARD", "value": "EC:4"} in spec["env"]
    assert spec["image"] == site.versions.images["aistor-server"].ref
    assert spec["configuration"] == {"name": "aistor-env"} and spec["prometheusOperator"] is True


def test_rdma_switch_selects_the_rdma_build(config_copy):
    edit_yaml(config_copy, "storage.yaml", lambda d: d["aistor"].update(rdma=True))
    site = load_site(config_copy)
    (store,) = [
        f for f in synthesize(site, ["one-cluster"]) if f.path.name == "aistor.objectstore.aistor.yaml"
    ]
    spec = store.documents[0]["spec"]
    assert spec["image"].endswith(".rdma")
    assert {"name": "MINIO_RDMA_INTERNODE", "value": "on"} in spec["env"]
    pool = spec["pools"][0]
    assert {"rdma/rdma_rail_a", "rdma/rdma_rail_b"} <= set(pool["resources"]["requests"])
    networks = json.loads(pool["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert [n["interface"] for n in networks] == ["net-a", "net-b"]


def test_nothing_but_aistor_tolerates_the_aistor_taint(docs, site):
    pools = resolve(site, "one-cluster").clusters[0].pools
    storage = next(p for p in pools if p.name == "storage")
    agents = allow_lists(site).agents_of("one-cluster", "ai")
    checked = 0
    for w in workloads([d for d in docs if d.variant == "one-cluster"], agents):
        if not set(storage.taints) & tolerated_taints(w.placement, pools):
            continue
        checked += 1
        if w.agent is not None:
            assert {"*", "storage"} & set(w.agent.pools), w.agent_key
        else:
            assert storage in targeted_pools(w.placement, pools), (
                f"{w.doc.file} {w.path} tolerates dedicated=aistor"
            )
    assert checked > 3


@pytest.mark.parametrize("mount_pools", [["infra", "compute", "gpu"], ["infra", "compute"]])
def test_csi_node_plugin_reaches_exactly_the_configured_pools(config_copy, mount_pools):
    edit_yaml(config_copy, "storage.yaml", lambda d: d["powerscale"].update(mount_pools=mount_pools))
    site = load_site(config_copy)
    (values,) = [f for f in synthesize(site, ["one-cluster"]) if f.path.name == "csi-isilon.yaml"]
    node = values.documents[0]["node"]
    pools = resolve(site, "one-cluster").clusters[0].pools
    tolerated = tolerated_taints(node, pools)
    reached = [p.name for p in targeted_pools(node, pools) if set(p.taints) <= tolerated]
    assert reached == mount_pools


def test_untainted_pool_missing_from_mount_pools_is_refused(config_copy):
    edit_yaml(config_copy, "storage.yaml", lambda d: d["powerscale"].update(mount_pools=["infra", "gpu"]))
    with pytest.raises(Exception, match="untainted pool 'compute'"):
        load_site(config_copy)


def test_every_storage_class_parameter_comes_from_config(config_copy):
    def change(d):
        ps = d["powerscale"]
        ps.update(
            access_zone="zone9",
            base_path="/ifs/other",
            smartconnect="nfs9.example.internal",
            nfs_version="3",
            cluster_name="ps9",
        )
        ps["classes"]["home"].update(root_squash=False, path="users")

    edit_yaml(config_copy, "storage.yaml", change)
    site = load_site(config_copy)
    (home,) = [
        f for f in synthesize(site, ["one-cluster"]) if f.path.name == "storageclass.powerscale-home.yaml"
    ]
    sc = home.documents[0]
    assert sc["parameters"] == {
        "ClusterName": "ps9",
        "AccessZone": "zone9",
        "IsiPath": "/ifs/other/users",
        "AzServiceIP": "nfs9.example.internal",
        "RootClientEnabled": "true",
    }
    assert sc["mountOptions"] == ["vers=3"] and sc["provisioner"] == "csi-isilon.dellemc.com"


def test_storage_classes_for_the_seed_uses():
    names = sorted(p.name for p in (DIST / "one-cluster/apps/ai/powerscale").glob("storageclass.*.yaml"))
    assert names == [
        "storageclass.powerscale-archive.yaml",
        "storageclass.powerscale-datasets.yaml",
        "storageclass.powerscale-home.yaml",
    ]
    cache = _one(DIST / "one-cluster/apps/ai/local-nvme/storageclass.local-nvme.yaml")
    assert cache["volumeBindingMode"] == "WaitForFirstConsumer" and cache["provisioner"] == "topolvm.io"


def test_credentials_only_by_reference(docs, site):
    kinds = {}
    for doc in docs:
        if not doc.is_values:
            kinds.setdefault(doc.kind, []).append(doc.body)
    # charts render a few Secrets their controllers fill at run time; none carries a value from git
    # (SEC-001 holds every Secret to this)
    for secret in kinds["Secret"]:
        meta = secret["metadata"]
        for key, value in {**(secret.get("data") or {}), **(secret.get("stringData") or {})}.items():
            assert not value, (meta, key)
    names = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in kinds["ExternalSecret"]}
    assert {
        ("aistor", "aistor-env"),
        ("aistor-operator", "minio-license"),
        ("isilon", "csi-isilon-creds"),
        ("isilon", "csi-isilon-certs-0"),
        ("argocd", "repo-site-gitops"),
        ("argocd", "cluster-aistor"),
    } <= names
    stores = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in kinds["SecretStore"]}
    assert {(ns, "site-vault") for ns, _ in names} <= stores  # every reader has its own store
    assert "ClusterSecretStore" not in kinds


def test_two_cluster_aistor_lives_in_the_aistor_cluster(site):
    assert not (DIST / "two-cluster/apps/ai/aistor").exists()
    for variant, cluster in (("two-cluster", "aistor"), ("one-cluster", "ai")):
        spec = _object_store(variant, cluster)["spec"]
        # the hub (two clusters), hosts and the operator's `mc` reach it under its external name
        assert spec["services"]["minio"]["serviceType"] == "LoadBalancer"
        assert spec["certificates"]["config"]["dnsNames"] == [site.storage.aistor.s3_hostname]


def test_local_cache_tier_on_the_configured_pools():
    values = _one(DIST / "one-cluster/values/ai/topolvm.yaml")
    terms = values["lvmd"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": f"node-role.kubernetes.io/{role}", "operator": "In", "values": ["true"]}
            ]
        }
        for role in ("infra", "gpu")
    ]
    assert values["lvmd"]["deviceClasses"][0]["volume-group"] == "nvme-cache"
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    for pool in ("infra", "gpu"):  # the scripts that make the volume group on each pool's hosts
        assert f"local-cache-{pool}.sh   # on every {pool} host" in runbook
        assert (
            "vgcreate nvme-cache $found"
            in (DIST / f"one-cluster/kubeadm/ai/local-cache-{pool}.sh").read_text()
        )


def test_snapshot_class_and_l2_announcement_are_validated_by_typed_models(tree):
    """A misspelt field fails validate: the snapshot class against the CRD its chart renders, the L2
    announcement policy against its typed stand-in (the Cilium operator registers it at run time)."""
    from .conftest import validate

    path = tree / "one-cluster/apps/ai/powerscale/volumesnapshotclass.powerscale.yaml"
    path.write_text(path.read_text().replace("deletionPolicy: Delete", "deletionPolicy: Keep"))
    result = validate(tree)
    assert result.exit_code == 1 and "volumesnapshotclass.powerscale.yaml" in result.stdout
