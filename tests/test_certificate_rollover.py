"""A renewed certificate reaches the servers that mount it (TLS-001): those that load their pair only
at start are rolled by the namespace's CertificateRollover, whose script runs here as shipped against
the API server stand-in; the others say how they reload (Grafana's certs_watch_interval)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from constructs.certificate_rollover import ANNOTATION, LIST_KEY, NAME
from sitegen.check.bringup.apiserver import fake_apiserver
from sitegen.components.observability.grafana import CERTS_WATCH_INTERVAL

from .conftest import DIST, edit_documents, findings

CONFIG = DIST / "one-cluster/apps/ai/harbor-config"
CERTIFICATE = "/apis/cert-manager.io/v1/namespaces/harbor/certificates/harbor-tls"
NGINX = "/apis/apps/v1/namespaces/harbor/deployments/harbor-nginx"


def _doc(path):
    return next(d for d in yaml.safe_load_all(path.read_text()) if d)


def _rollover(tmp_path, objects):
    """The shipped CronJob's script, one run, against `objects`: (exit, output, objects after)."""
    if not all(shutil.which(t) for t in ("curl", "openssl")):
        pytest.skip("curl and openssl run the shipped script")
    job = _doc(CONFIG / f"harbor.cronjob.{NAME}.yaml")
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    listed = tmp_path / LIST_KEY
    listed.write_text(_doc(CONFIG / f"harbor.configmap.{NAME}.yaml")["data"][LIST_KEY])
    with fake_apiserver(tmp_path / "api") as api:
        api.objects = objects
        sa = tmp_path / "sa"
        sa.mkdir(exist_ok=True)
        (sa / "token").write_text(api.token)
        shutil.copyfile(api.ca, sa / "ca.crt")
        env = {e["name"]: e["value"] for e in container["env"]}
        env.update(WORKLOAD_LIST=str(listed), SA_DIR=str(sa), API_SERVER=api.url, TMPDIR=str(tmp_path))
        done = subprocess.run(
            container["command"], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True,
            check=False, timeout=60,
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr, api.objects


def _annotation(deployment):
    return (deployment["spec"]["template"]["metadata"].get("annotations") or {}).get(ANNOTATION)


def test_harbor_nginx_is_rolled_once_per_renewal_of_its_certificate(tmp_path):
    nginx = _doc(DIST / "one-cluster/apps/ai/harbor/harbor.deployment.harbor-nginx.yaml")
    certificate = _doc(DIST / "one-cluster/apps/ai/gateway/harbor.certificate.harbor-tls.yaml")
    objects = {CERTIFICATE: certificate, NGINX: nginx}
    code, said, objects = _rollover(tmp_path, objects)
    assert code == 0 and "1 not issued yet" in said and _annotation(objects[NGINX]) is None, said
    certificate = {**certificate, "status": {"notBefore": "2027-01-01T00:00:00Z"}}
    code, said, objects = _rollover(tmp_path, {**objects, CERTIFICATE: certificate})
    assert code == 0 and "rolled 1 workloads" in said, said
    assert _annotation(objects[NGINX]) == "2027-01-01T00:00:00Z"
    assert objects[NGINX]["spec"]["template"]["metadata"]["annotations"]["checksum/configmap"]  # merged
    code, said, objects = _rollover(tmp_path, objects)
    assert code == 0 and "rolled 0 workloads; 1 load their certificate's current pair" in said, said
    renewed = {**certificate, "status": {"notBefore": "2027-03-02T00:00:00Z"}}  # day 60
    code, said, objects = _rollover(tmp_path, {**objects, CERTIFICATE: renewed})
    assert code == 0 and _annotation(objects[NGINX]) == "2027-03-02T00:00:00Z", said


def test_a_listed_workload_that_is_not_there_fails_the_job(tmp_path):
    certificate = {**_doc(DIST / "one-cluster/apps/ai/gateway/harbor.certificate.harbor-tls.yaml")}
    certificate["status"] = {"notBefore": "2027-01-01T00:00:00Z"}
    code, said, _ = _rollover(tmp_path, {CERTIFICATE: certificate})
    assert code != 0 and "404" in said


def test_the_rollover_may_read_its_certificates_and_roll_its_workloads_and_nothing_else():
    role = _doc(CONFIG / f"harbor.role.{NAME}.yaml")
    assert role["rules"] == [
        {"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "resourceNames": ["harbor-tls"],
         "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"],
         "resourceNames": ["harbor-nginx"]},
    ]  # fmt: skip


def test_grafana_reloads_its_renewed_pair():
    """What Grafana's reloads_certificates says holds: it serves HTTPS and watches its pair's files
    (its default interval, 0, never looks again)."""
    ini = _doc(DIST / "one-cluster/apps/ai/grafana/grafana.configmap.grafana.yaml")["data"]["grafana.ini"]
    server = ini.split("[server]", 1)[1].split("\n[", 1)[0]
    assert "protocol = https" in server and f"certs_watch_interval = {CERTS_WATCH_INTERVAL}" in server, server
    assert CERTS_WATCH_INTERVAL not in ("0", "0s")


@pytest.mark.tree_variants("one-cluster")
def test_a_server_nothing_rolls_is_found(tree):
    (tree / f"one-cluster/apps/ai/harbor-config/harbor.configmap.{NAME}.yaml").unlink()
    lines = findings(tree)
    assert any(
        "Deployment harbor/harbor-nginx: TLS-001" in line and "Certificate harbor-tls" in line
        for line in lines
    ), lines


@pytest.mark.tree_variants("one-cluster")
def test_a_rollover_of_a_workload_that_is_not_rendered_is_found(tree):
    def renamed(doc):
        doc["data"][LIST_KEY] = doc["data"][LIST_KEY].replace("harbor-nginx", "harbor-proxy")

    edit_documents(tree, f"one-cluster/apps/ai/harbor-config/harbor.configmap.{NAME}.yaml", renamed)
    lines = findings(tree)
    assert any(
        "TLS-001" in line and "lists Deployment/harbor-proxy, which is not rendered" in line for line in lines
    )
    assert any("Deployment harbor/harbor-nginx: TLS-001" in line for line in lines)
