"""The issuing CA: an intermediate the site CA signs, held by name constraints to the names the site's
certificates carry, so the root's key never enters a cluster (internal-ca only)."""

from __future__ import annotations

from constructs.ca_expiry import NAME as EXPIRY_CHECK
from constructs.ca_expiry import WARN_DAYS
from constructs.edge import ISSUING_CA_STEP, ISSUING_CA_VAULT_KEY, SITE_CA_CERT_VAULT_KEY
from sitegen.compose.apps import VariantApps
from sitegen.model import Site
from sitegen.tree.runbook import Runbook

VALID_DAYS = 730


def permitted_names(site: Site) -> list[str]:
    """The DNS subtrees the issuing CA may sign: each of the site's public names itself (not their
    parent domain, which holds the vault's, Git's and the login's names too: a key read from a cluster
    could otherwise mint a certificate for them), the Services' `svc` and each cluster's DNS domain."""
    services = site.services
    public = {
        site.gitops.argocd.hostname, services.monitoring.grafana_hostname,
        services.monitoring.telemetry_hostname, services.registry.hostname, services.serving.hostname,
    }  # fmt: skip
    return sorted(public | {"svc"} | {c.dns_domain for c in site.clusters.values()})


def issuing_ca(book: Runbook, apps: VariantApps) -> None:
    site = apps.site
    if not site.services.certificates.internal_ca:
        return
    kv = site.secrets.vault.path
    names = permitted_names(site)
    constraints = ", ".join(f"permitted;DNS:{n}" for n in names)
    book.step(
        ISSUING_CA_STEP,
        f"""
cert-manager signs every certificate of the site with an intermediate of the site CA, held by name
constraints to {", ".join(f"`{n}`" for n in names)} (and their subdomains): the site CA's key stays
where it is kept, never in a cluster; a certificate for any other name, minted by whoever got hold of
the intermediate, fails every client that checks the chain. Where the site CA's key is kept, with
`site-ca.crt` and `site-ca.key`:

```sh
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=issuing CA" \\
  -keyout issuing-ca.key -out issuing-ca.csr
cat > issuing-ca.ext <<'EOF'
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
nameConstraints = critical, {constraints}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
openssl x509 -req -in issuing-ca.csr -CA site-ca.crt -CAkey site-ca.key -CAcreateserial -sha256 \\
  -days {VALID_DAYS} -extfile issuing-ca.ext -out issuing-ca.crt
cat issuing-ca.crt site-ca.crt > issuing-ca-chain.crt
vault kv put {kv}/{ISSUING_CA_VAULT_KEY} tls.crt=@issuing-ca-chain.crt tls.key=@issuing-ca.key
vault kv put {kv}/{SITE_CA_CERT_VAULT_KEY} tls.crt=@site-ca.crt
shred -u issuing-ca.key
```

Renew it the same way before its {VALID_DAYS} days run out: from {WARN_DAYS} days before it (or the site CA)
ends, the daily CronJob `{EXPIRY_CHECK}` of cert-manager's namespace fails and the alert
`IssuingCaExpiresSoon` fires. cert-manager signs with the new one once External Secrets has refreshed
its Secret (within the hour; at once with `kubectl -n cert-manager annotate externalsecret issuing-ca
force-sync=$(date +%s) --overwrite`), and each certificate it signed moves over at its own renewal, at
most 60 days after its issue (two thirds of cert-manager's 90): the alert comes that early for this.
""",
    )


def written_here(site: Site) -> set[str]:
    return {ISSUING_CA_VAULT_KEY, SITE_CA_CERT_VAULT_KEY} if site.services.certificates.internal_ca else set()
