"""The second backup target: each cluster's etcd, its PKI and its objects get a copy outside AIStor
(BAK-001), every backup has an alert (BAK-002), the PKI archive decrypts with the offline key the way
the RUNBOOK's drill says, and `plan` shows the recovery point of each data class."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from constructs.etcd_backup import FRESH_ARCHIVE, HOST_ARCHIVE_DIR, HOST_ARCHIVER, HOST_RECIPIENT, KUBEADM_DIR
from constructs.host_backup import OUTPUT_DIR
from sitegen.model import load_site
from sitegen.report.plan import plan_json, render_plan

from .conftest import CONFIG, DIST, edit_yaml, invoke_sitegen, validate

APP = "one-cluster/apps/ai/etcd-backup"
PKI_JOB = f"{APP}/etcd-backup.cronjob.pki-backup-powerscale.yaml"


def _findings(result, rule: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if rule in line]


def test_etcd_snapshotted_only_into_aistor_is_refused(tree):
    (tree / f"{APP}/etcd-backup.cronjob.etcd-backup-powerscale.yaml").unlink()
    result = validate(tree)
    assert result.exit_code == 1
    (found,) = _findings(result, "BAK-001")
    assert found.startswith(f"{APP}/etcd-backup.cronjob.etcd-backup.yaml [doc 0] CronJob etcd-backup")
    assert "etcd of cluster ai has no copy outside AIStor" in found


def test_a_pki_archive_sent_to_aistor_is_refused(tree):
    path = tree / PKI_JOB
    (job,) = yaml.safe_load_all(path.read_text())
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (upload,) = pod["containers"]
    next(e for e in upload["env"] if e["name"] == "S3_HOST")["value"] = "minio.aistor.svc.cluster.local"
    path.write_text(yaml.safe_dump(job))
    result = validate(tree)
    (found,) = _findings(result, "BAK-001")
    assert "CronJob etcd-backup/pki-backup-powerscale" in found and "cluster PKI of cluster ai" in found


def test_velero_only_into_aistor_is_refused(tree):
    (tree / "one-cluster/apps/ai/velero/velero.schedule.powerscale.yaml").unlink()
    result = validate(tree)
    (found, *_) = _findings(result, "BAK-001")
    assert "Velero of cluster ai backs up only into AIStor" in found
    # and the alerts of the dropped schedule now watch nothing: that is not a finding
    assert not _findings(result, "BAK-002")


def test_a_backup_without_an_alert_is_refused(tree):
    path = tree / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for group in docs[0]["spec"]["groups"]:
        group["rules"] = [r for r in group["rules"] if not r.get("alert", "").startswith("PkiBackup")]
    path.write_text(yaml.safe_dump_all(docs))
    result = validate(tree)
    (found,) = _findings(result, "BAK-002")
    assert found.startswith(f"{PKI_JOB} [doc 0] CronJob etcd-backup/pki-backup-powerscale")
    assert 'cronjob="pki-backup-powerscale"' in found


def test_the_ca_keys_stay_on_the_host(docs):
    """The clusters hold neither the recipient's key nor the CA keys: no recipient Secret, and the
    CronJob mounts only the host's ciphertext, as nobody (security review M4)."""
    assert not [d for d in docs if d.kind == "ExternalSecret" and d.name == "pki-backup-recipient"]
    jobs = [d for d in docs if d.kind == "CronJob" and d.name == "pki-backup-powerscale"]
    assert {d.variant for d in jobs} == {"one-cluster", "two-cluster"}
    for job in jobs:
        pod = job.body["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v] == [HOST_ARCHIVE_DIR]
        for container in [*pod["initContainers"], *pod["containers"]]:
            assert container["securityContext"]["runAsUser"] != 0


def test_a_third_party_image_that_reads_the_ca_keys_is_refused(tree):
    """The archive of the review's time put back: alpine/openssl over kubeadm's PKI folder, as root."""
    path = tree / PKI_JOB
    (job,) = yaml.safe_load_all(path.read_text())
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    pod["volumes"].append(
        {"name": "kubeadm-pki", "hostPath": {"path": "/etc/kubernetes/pki", "type": "Directory"}}
    )
    archive = pod["initContainers"][0]
    archive["image"] = "alpine/openssl:3.5.8"
    archive["securityContext"]["runAsUser"] = 0
    archive["volumeMounts"].append(
        {"name": "kubeadm-pki", "mountPath": "/etc/kubernetes/pki", "readOnly": True}
    )
    path.write_text(yaml.safe_dump(job))
    result = validate(tree)
    (found,) = _findings(result, "SEC-008")
    assert found.startswith(f"{PKI_JOB} [doc 0] CronJob etcd-backup/pki-backup-powerscale")
    assert "alpine/openssl:3.5.8 mounts /etc/kubernetes/pki/ca.key from the host" in found


def _heredoc(script: str, target: str) -> str:
    return script.split(f"cat > {target} <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0] + "\n"


def test_the_pki_archive_decrypts_with_the_offline_key_as_the_drill_says(tmp_path: Path):
    """The host's archiver as host-prep installs it, run with the host's tar and openssl over a stand-in
    kubeadm folder; the CronJob's freshness check hands it on; then the RUNBOOK drill's decrypt command,
    verbatim but for file names, gives the four CA keys back and the encryption key of the Secrets at
    rest (escrowed with them, for a restore without the vault), and nothing kubeadm makes anew."""
    kubeadm = tmp_path / "etc/kubernetes"
    (kubeadm / "pki/etcd").mkdir(parents=True)
    for name in ("ca", "sa", "front-proxy-ca", "etcd/ca", "apiserver", "etcd/server"):
        (kubeadm / f"pki/{name}.key").write_text(f"secret of {name}\n")
    for name in ("ca.crt", "front-proxy-ca.crt", "etcd/ca.crt", "sa.pub"):
        (kubeadm / f"pki/{name}").write_text(f"public {name}\n")
    (kubeadm / "enc").mkdir()
    (kubeadm / "enc/enc.yaml").write_text("secret of the encryption key\n")
    archive_dir, out = tmp_path / "archive", tmp_path / "backup"
    archive_dir.mkdir()
    out.mkdir()
    recipient = tmp_path / "recipient.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=pki-backup",
         "-days", "1", "-keyout", tmp_path / "pki-backup.key", "-out", recipient],
        check=True, capture_output=True,
    )  # fmt: skip
    prep = (DIST / "one-cluster/kubeadm/ai/host-prep-control-plane.sh").read_text()
    archiver = (
        _heredoc(prep, HOST_ARCHIVER)
        .replace(HOST_RECIPIENT, str(recipient))
        .replace(str(KUBEADM_DIR), str(kubeadm))
        .replace(HOST_ARCHIVE_DIR, str(archive_dir))
    )
    subprocess.run(["bash", "-c", archiver], check=True, capture_output=True)
    assert b"secret of" not in (archive_dir / "pki.tar.cms").read_bytes()
    fresh = FRESH_ARCHIVE.replace(HOST_ARCHIVE_DIR, str(archive_dir)).replace(OUTPUT_DIR, str(out))
    subprocess.run(["sh", "-c", fresh], check=True, capture_output=True)
    archive = out / "pki.tar.cms"

    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    (decrypt,) = re.findall(r"^openssl cms -decrypt .*\\\n.*$", runbook, flags=re.M)
    command = (
        decrypt.replace("\\\n", " ")
        .replace("drill-pki.tar.cms", str(archive))
        .replace("pki-backup.crt", str(recipient))
        .replace("pki-backup.key", str(tmp_path / "pki-backup.key"))
        .split("   #")[0]
    )
    listed = subprocess.run(["bash", "-c", command], check=True, capture_output=True, text=True).stdout
    assert sorted(line.split()[-1] for line in listed.splitlines()) == [
        "enc/enc.yaml", "pki/ca.key", "pki/etcd/ca.key", "pki/front-proxy-ca.key", "pki/sa.key",
    ]  # fmt: skip
    everything = subprocess.run(
        ["bash", "-c", command.split("| grep")[0]], check=True, capture_output=True, text=True
    ).stdout
    assert "apiserver.key" not in everything and "server.key" not in everything


def test_plan_shows_each_data_class_with_its_recovery_point(config_copy: Path):
    config = config_copy
    edit_yaml(
        config, "services.yaml", lambda d: d["backups"]["second"]["etcd"].update(schedule="0 */4 * * *")
    )
    site = load_site(config)
    points = json.loads(plan_json(site))["recovery_points"]
    second_etcd = next(p for p in points if p["data"] == "etcd" and p["where"].startswith("powerscale"))
    assert second_etcd["rpo_hours"] == 4 and second_etcd["kept_days"] == 30
    assert {p["data"] for p in points} >= {"etcd", "cluster PKI", "platform objects", "tenant objects",
                                           "tenant volumes", "AIStor objects"}  # fmt: skip
    pki = [p for p in points if p["data"] == "cluster PKI"]
    assert [p["where"] for p in pki] == ["powerscale s3://site-backups-second-pki/pki/"]
    uncopied = next(p for p in points if p["data"] == "tenant volumes" and p["where"] == "-")
    assert "data mover" in uncopied["how"]
    text = render_plan(load_site(CONFIG))
    assert "recovery point" in text and "powerscale s3://site-backups-" in text


def test_the_second_targets_expiry_follows_the_retention_of_config(site):
    second = site.services.backups.second
    folder = DIST / "two-cluster/bootstrap/second-target"
    expiry = {}
    for consumer in ("etcd", "pki", "velero"):
        rules = json.loads((folder / f"{second.bucket_of(consumer)}-lifecycle.json").read_text())["Rules"]
        expiry.update(
            {r["Filter"]["Prefix"]: r["Expiration"]["Days"] for r in rules if "Days" in r["Expiration"]}
        )
        (cleanup,) = [r for r in rules if "NoncurrentVersionExpiration" in r]
        assert cleanup["NoncurrentVersionExpiration"]["NoncurrentDays"] >= second.lock_days
    assert expiry == {"etcd/": second.etcd.retention_days, "pki/": second.pki.retention_days}


@pytest.mark.parametrize("variant", ["one-cluster", "two-cluster"])
def test_no_two_consumers_write_one_bucket_of_the_second_target_and_each_is_locked(variant):
    """Each consumer's key writes its own bucket only (the RUNBOOK's ACEs), every bucket is created with
    S3 Object Lock in COMPLIANCE mode: a stolen key erases neither another's copies nor its own."""
    runbook = (DIST / variant / "bootstrap/RUNBOOK.md").read_text()
    writers: dict[str, set[str]] = {}
    for bucket, user in re.findall(
        r"isi s3 buckets modify (\S+) --zone \S+ --add-ace name=([\w-]+),type=user,perm=WRITE", runbook
    ):
        writers.setdefault(bucket, set()).add(user)
    assert len(writers) >= 3 and all(len(users) == 1 for users in writers.values()), writers
    for bucket in writers:
        assert f"create-bucket --bucket {bucket} --object-lock-enabled-for-bucket" in runbook
        lock = re.search(rf"put-object-lock-configuration --bucket {bucket} .*?\n  '(.*?)'", runbook)
        assert lock and json.loads(lock.group(1))["Rule"]["DefaultRetention"]["Mode"] == "COMPLIANCE"


def test_a_lock_longer_than_a_retention_is_a_config_error(config_copy: Path):
    edit_yaml(config_copy, "services.yaml", lambda d: d["backups"]["second"].update(lock_days=40))
    result = invoke_sitegen("plan", "--config", config_copy)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "services.yaml: backups.second" in line and "locked for lock_days 40" in line


def test_a_claim_the_tenants_backup_cannot_snapshot_is_refused(tree):
    """TopoLVM's local cache has no VolumeSnapshotClass: without the volume policy's skip, the nightly
    tenant backup would fail on the model servers' cache claims."""
    path = tree / "one-cluster/apps/ai/velero/velero.configmap.volume-policy.yaml"
    (config_map,) = yaml.safe_load_all(path.read_text())
    policy = yaml.safe_load(config_map["data"]["policy.yaml"])
    policy["volumePolicies"][0]["conditions"]["storageClass"].remove("local-nvme")
    config_map["data"]["policy.yaml"] = yaml.safe_dump(policy)
    path.write_text(yaml.safe_dump(config_map))
    result = validate(tree)
    assert result.exit_code == 1
    (found, *_) = _findings(result, "BAK-003")
    assert "StatefulSet ai-research/llama-3-3-70b" in found
    assert "class local-nvme, driver topolvm.io" in found and "the volume policy of Schedule tenants" in found


# velero-plugin-for-aws releases that wrap uploads in aws-chunked framing even with checksumAlgorithm
# "", which stores the framing inside the objects of stores that do not decode it (velero#9951)
FRAMING_PLUGINS = {"v1.14.1", "v1.14.2"}


def test_the_second_target_gets_no_sdk_checksums_from_a_plugin_that_honours_it():
    """The AWS plugin's default CRC32 checksums go as aws-chunked trailers, which S3 stores outside AWS
    and MinIO refuse or keep inside the object: the second target's location turns them off, AIStor's
    keeps them, and the plugin that runs is one that honours the switch."""
    for variant in ("one-cluster", "two-cluster"):
        locations = sorted(DIST.glob(f"{variant}/apps/*/velero/velero.backupstoragelocation.*.yaml"))
        configs = {p.stem.rsplit(".", 1)[-1]: yaml.safe_load_all(p.read_text()) for p in locations}
        configs = {name: next(d for d in docs if d)["spec"]["config"] for name, docs in configs.items()}
        assert configs["powerscale"]["checksumAlgorithm"] == ""
        assert "checksumAlgorithm" not in configs["aistor"]
        for deployment in DIST.glob(f"{variant}/apps/*/velero/velero.deployment.velero.yaml"):
            doc = next(d for d in yaml.safe_load_all(deployment.read_text()) if d)
            spec = doc["spec"]["template"]["spec"]
            (plugin,) = [c["image"] for c in spec["initContainers"] if "velero-plugin-for-aws" in c["image"]]
            assert plugin.rsplit(":", 1)[1] not in FRAMING_PLUGINS, deployment
