"""The issuing CA's end is watched (cert-manager signs leaves that outlive their CA and tracks only the
leaves): the shipped check runs here on chains openssl makes, and the site alerts turn its failure
into an alert that names the RUNBOOK step."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from constructs.ca_expiry import CHAIN, NAME, WARN_DAYS
from constructs.edge import ISSUING_CA_SECRET, ISSUING_CA_STEP

from .conftest import DIST

CRONJOB = DIST / f"one-cluster/apps/ai/gateway/cert-manager.cronjob.{NAME}.yaml"
RULES = DIST / "one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml"


def _doc(path):
    return next(d for d in yaml.safe_load_all(path.read_text()) if d)


def _openssl(*args) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _chain(folder: Path, intermediate_days: int, root_days: int, serial: str = "0x1d") -> Path:
    """The RUNBOOK's shape: an intermediate signed by a root, both in the Secret's tls.crt."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-days", root_days, "-keyout", folder / "root.key", "-out", folder / "root.crt",
             "-subj", "/CN=site CA")  # fmt: skip
    _openssl("req", *ec, "-keyout", folder / "ca.key", "-out", folder / "ca.csr", "-subj", "/CN=issuing CA")
    _openssl("x509", "-req", "-in", folder / "ca.csr", "-CA", folder / "root.crt", "-CAkey", folder / "root.key",
             "-set_serial", serial, "-days", intermediate_days, "-out", folder / "ca.crt")  # fmt: skip
    chain = folder / CHAIN
    chain.write_text((folder / "ca.crt").read_text() + (folder / "root.crt").read_text())
    return chain


def _check(tmp_path: Path, chain: Path) -> subprocess.CompletedProcess[str]:
    if not shutil.which("openssl"):
        pytest.skip("openssl makes the chains")
    (container,) = _doc(CRONJOB)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    work = tmp_path / "work"
    work.mkdir()
    env.update(CHAIN=str(chain), TMPDIR=str(work), PATH="/usr/bin:/bin")
    return subprocess.run(
        container["command"], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def test_a_chain_that_ends_within_the_warning_fails_the_check(tmp_path):
    done = _check(tmp_path, _chain(tmp_path, WARN_DAYS - 1, 3650))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"certificate 1 of the chain ends within {WARN_DAYS} days" in done.stderr


def test_a_root_that_ends_soon_fails_it_too_and_a_far_end_passes(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    done = _check(tmp_path / "a", _chain(tmp_path / "a", 700, WARN_DAYS - 5))
    assert done.returncode == 1 and "certificate 2 of the chain ends within" in done.stderr, done.stderr
    # past 2049 a certificate's times are GeneralizedTime; a serial of UTCTime's tag and length bytes
    # must not be taken for the validity
    done = _check(tmp_path / "b", _chain(tmp_path / "b", 730, 20000, serial="0x170d170d170d170d"))
    assert done.returncode == 0, done.stdout + done.stderr
    ends = [line.split()[6] for line in done.stdout.splitlines()]
    assert len(ends) == 2 and ends[1] > "2070" and ends[0] < ends[1]


def test_the_check_reads_the_chain_and_never_the_key():
    pod = _doc(CRONJOB)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"] == {"secretName": ISSUING_CA_SECRET, "items": [{"key": CHAIN, "path": CHAIN}]}
    assert pod["automountServiceAccountToken"] is False


def test_a_failed_check_is_a_critical_alert_naming_the_runbook_step():
    cronjob = _doc(CRONJOB)["metadata"]
    rules = {r["alert"]: r for g in _doc(RULES)["spec"]["groups"] for r in g["rules"]}
    soon = rules["IssuingCaExpiresSoon"]
    assert (
        soon["labels"]["severity"] == "critical" and f'"{ISSUING_CA_STEP}"' in soon["annotations"]["summary"]
    )
    jobs = f'namespace="{cronjob["namespace"]}", job_name=~"{cronjob["name"]}-[0-9]+"'
    assert f"kube_job_status_failed{{{jobs}}}" in soon["expr"]
    assert f'cronjob="{cronjob["name"]}"' in rules["IssuingCaExpiryUnchecked"]["expr"]
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    assert f"`{NAME}`" in runbook and "IssuingCaExpiresSoon" in runbook
