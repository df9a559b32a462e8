"""config/secrets.yaml: the site vault every credential is read from (through External Secrets)."""

from __future__ import annotations

from typing import Literal

from sitegen.model.fields import DnsLabel, HttpsUrl, Strict


class VaultBackend(Strict):
    server: HttpsUrl
    path: str
    version: Literal["v1", "v2"] = "v2"
    auth_mount: str
    role: str


class Secrets(Strict):
    store: DnsLabel
    provider: Literal["vault"]
    vault: VaultBackend
