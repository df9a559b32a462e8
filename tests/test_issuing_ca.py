"""The issuing CA, made as the RUNBOOK says with the host's openssl from a throwaway site CA: what it
signs for the site's names verifies against the site CA alone; a certificate for any other name, or
a bare Service name, does not (name constraints); the root's key is in no cluster."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .conftest import DIST

RUNBOOK = DIST / "one-cluster/bootstrap/RUNBOOK.md"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def issuing(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    _run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-subj", "/CN=site CA", "-days", "2", "-keyout", "site-ca.key", "-out", "site-ca.crt",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         cwd=folder)  # fmt: skip
    step = RUNBOOK.read_text().split("The issuing CA\n", 1)[1]
    (block,) = re.findall(r"```sh\n(.*?)```", step, flags=re.S)[:1]
    script = "\n".join(line for line in block.splitlines() if not line.startswith("vault "))
    result = _run("bash", "-euc", script, cwd=folder)
    assert result.returncode == 0, result.stderr
    assert not (folder / "issuing-ca.key").exists()  # shredded once in the vault
    # the vault's copy of the key, for signing leaves below (the test keeps what the runbook shreds)
    _run("bash", "-euc", script.replace("shred -u issuing-ca.key", "true").replace(
        "issuing-ca.key", "kept.key").replace("issuing-ca.crt", "kept.crt").replace(
        "issuing-ca-chain.crt", "kept-chain.crt"), cwd=folder)  # fmt: skip
    return folder


def _leaf(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    slug = re.sub(r"\W", "-", name)
    _run("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-subj", f"/CN={name}", "-keyout", f"{slug}.key", "-out", f"{slug}.csr", cwd=folder)  # fmt: skip
    (folder / f"{slug}.ext").write_text(f"subjectAltName = DNS:{name}\n")
    _run("openssl", "x509", "-req", "-in", f"{slug}.csr", "-CA", "kept.crt", "-CAkey", "kept.key",
         "-CAcreateserial", "-days", "1", "-extfile", f"{slug}.ext", "-out", f"{slug}.crt", cwd=folder)  # fmt: skip
    return _run(
        "openssl", "verify", "-CAfile", "site-ca.crt", "-untrusted", "kept.crt", f"{slug}.crt", cwd=folder
    )


@pytest.mark.parametrize(
    "name", ["grafana.hpc.example.internal", "grafana.grafana.svc", "grafana.grafana.svc.cluster.local"]
)
def test_the_sites_names_verify(issuing, name):
    result = _leaf(issuing, name)
    assert result.returncode == 0 and result.stdout.strip().endswith(": OK"), result.stdout + result.stderr


@pytest.mark.parametrize(
    "name",
    [
        "login.bank.example.com",
        "grafana",
        "kubernetes.default",
        # the site's other names under its domain: the vault's, Git's, the login's are not the clusters' to sign
        "vault.hpc.example.internal",
        "git.hpc.example.internal",
    ],
)
def test_other_names_fail_the_chain(issuing, name):
    result = _leaf(issuing, name)
    assert result.returncode != 0 and "permitted subtree violation" in result.stdout + result.stderr


def test_the_gateway_and_backend_certificates_carry_only_permitted_names(docs):
    from sitegen.compose.procedures.issuing_ca import permitted_names
    from sitegen.model import load_site

    from .conftest import CONFIG

    allowed = permitted_names(load_site(CONFIG))
    names = [
        n for d in docs
        if d.kind == "Certificate" and d.body["spec"]["issuerRef"].get("name") == "site"
        for n in d.body["spec"]["dnsNames"]
    ]  # fmt: skip
    assert names and all(any(n == a or n.endswith("." + a) for a in allowed) for n in names), names


def test_no_cluster_reads_the_site_cas_key(docs):
    keys = {
        item["remoteRef"]["key"]
        for d in docs if d.kind == "ExternalSecret"
        for item in d.body["spec"].get("data") or []
    }  # fmt: skip
    assert "pki/site-ca" not in keys and "pki/issuing-ca" in keys
