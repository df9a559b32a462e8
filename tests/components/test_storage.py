"""Storage components: AIStor (operator, volume manager, ObjectStore), PowerScale CSI, TopoLVM."""

from __future__ import annotations

from sitegen.check.placement import targeted_pools
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.aistor_operator import AIStorOperator
from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager
from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.storage.powerscale import PowerScale
from sitegen.components.storage.snapshot_controller import SnapshotController
from sitegen.components.storage.topolvm import TopoLvm

from .conftest import by_kind, context, render


def test_object_store_spans_the_storage_pool_at_the_configured_parity(one, small):
    (store,) = by_kind(render(one, "ai", AIStor), "ObjectStore")
    (pool,) = store["spec"]["pools"]
    assert pool["servers"] == small.pools["storage"].count == 4
    assert pool["volumesPerServer"] == small.hardware_of("storage").nvme.drives
    env = {e["name"]: e["value"] for e in store["spec"]["env"]}
    assert env["MINIO_STORAGE_CLASS_STANDARD"] == f"EC:{small.aistor_layout().parity}"


def test_aistor_licence_reaches_both_licensed_namespaces(one):
    secrets = by_kind(render(one, "ai", AIStor), "ExternalSecret")
    licensed = {s["metadata"]["namespace"] for s in secrets if s["metadata"]["name"] == "minio-license"}
    assert licensed == {AIStorOperator.namespace, AIStorVolumeManager.namespace}


def test_aistor_serves_s3_on_its_external_name_and_in_cluster_to_its_own(one, two, small):
    for apps, cluster in ((one, "ai"), (two, "aistor")):
        (store,) = by_kind(render(apps, cluster, AIStor), "ObjectStore")
        assert store["spec"]["services"]["minio"]["serviceType"] == "LoadBalancer"
    assert AIStor.s3_endpoint(small, context(two, "ai").cluster).host == small.storage.aistor.s3_hostname
    assert AIStor.s3_endpoint(small, context(one, "ai").cluster).host.endswith(".svc.cluster.local")


def test_volume_manager_node_server_runs_where_aistor_runs(one):
    values = render(one, "ai", AIStorVolumeManager)
    pools = context(one, "ai").cluster.pools
    assert [p.name for p in targeted_pools(values["nodeserver"], pools)] == ["storage"]


def test_powerscale_secrets_are_named_for_the_csi_release(one, small):
    docs = render(one, "ai", PowerScale)
    names = {d["metadata"]["name"] for d in by_kind(docs, "ExternalSecret")}
    release = context(one, "ai").get(CsiIsilon).release_name
    assert names == {f"{release}-creds", f"{release}-certs-0"}
    classes = {c["metadata"]["name"] for c in by_kind(docs, "StorageClass")}
    assert classes == {f"powerscale-{use}" for use in small.storage.powerscale.classes}


def test_topolvm_runs_on_the_cache_pools_only(one, small):
    values = render(one, "ai", TopoLvm)
    pools = context(one, "ai").cluster.pools
    for part in ("node", "lvmd"):
        assert {p.name for p in targeted_pools(values[part], pools)} == set(small.storage.local_cache.pools)
    (cls,) = render(one, "ai", LocalNvme)
    assert cls["volumeBindingMode"] == "WaitForFirstConsumer"


def test_snapshot_controller_where_powerscale_takes_snapshots(two):
    """It installs the VolumeSnapshot CRDs the PowerScale class needs, and syncs before it."""
    ctx = context(two, "ai")
    values = render(two, "ai", SnapshotController)
    assert values["installCRDs"] is True and values["controller"]["nodeSelector"] == {
        "node-role.kubernetes.io/infra": "true"
    }
    assert ctx.wave(ctx.get(SnapshotController)) < ctx.wave(ctx.get(PowerScale))
    assert not context(two, "aistor").has(SnapshotController)  # the storage pool mounts no PowerScale
