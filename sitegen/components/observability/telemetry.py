"""The telemetry door between clusters: the names the hub's Gateway and the other clusters' agents share.

Agents outside the hub deliver through the site Gateway at `services.monitoring.telemetry_hostname`:
metrics by Prometheus remote write, logs by OTLP, with one basic-auth pair from the vault.
"""

from __future__ import annotations

from constructs.edge import SITE_CA_CERT_VAULT_KEY
from sitegen.components.base import VaultSecretSpec
from sitegen.model import Site

REMOTE_WRITE_SECRET = (
    "remote-write"  # the agents' basic-auth pair (username, password, basic), from the vault
)
TELEMETRY_USERS = "telemetry-users"  # htpasswd the Gateway checks the agents against
CLIENT_VAULT_KEY = "telemetry/client"
# With the internal CA, agents trust the Gateway's certificate through the site CA: its certificate
# only, as this Secret.
SITE_CA_SECRET = "site-ca-cert"
SITE_CA_KEY = "tls.crt"
HTPASSWD_VAULT_KEY = "telemetry/htpasswd"


def delivery_credentials(namespace: str, site: Site) -> list[VaultSecretSpec]:
    """What an agent outside the hub delivers with, in its namespace: the basic-auth pair, and with the
    internal CA the site CA's certificate (never its key)."""
    pair = VaultSecretSpec(
        REMOTE_WRITE_SECRET, namespace, CLIENT_VAULT_KEY, ("username", "password"),
        {
            "username": "{{ .username }}",
            "password": "{{ .password }}",
            "basic": '{{ printf "%s:%s" .username .password | b64enc }}',
        },
    )  # fmt: skip
    return [pair, site_ca_certificate(namespace)] if site.services.certificates.internal_ca else [pair]


def site_ca_certificate(namespace: str) -> VaultSecretSpec:
    """The internal CA's certificate (never its key), for a client that trusts the site's names."""
    return VaultSecretSpec(SITE_CA_SECRET, namespace, SITE_CA_CERT_VAULT_KEY, (SITE_CA_KEY,))
