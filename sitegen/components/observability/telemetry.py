"""The telemetry door between clusters: the names the hub's Gateway and the other clusters' agents share.

Agents outside the hub deliver through the site Gateway at `services.monitoring.telemetry_hostname`:
metrics by Prometheus remote write, logs by OTLP, with one basic-auth pair from the vault.
"""

from __future__ import annotations

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
