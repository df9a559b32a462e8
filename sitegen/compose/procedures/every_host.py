"""Every host: containerd pulls through Harbor's proxy caches."""

from __future__ import annotations

from sitegen.compose import paths
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import Runbook


def every_host(book: Runbook, apps: VariantApps) -> None:
    site = apps.site
    registry = site.services.registry
    trust = (
        " Nodes must trust the site CA (OS trust store) for Harbor's certificate."
        if site.services.certificates.issuer == "internal-ca"
        else ""
    )
    book.part("Every host")
    book.step(
        "containerd pulls through Harbor",
        f"""
Copy `{paths.in_repo(paths.mirrors_dir(apps.layout.name))}/` to `/etc/containerd/certs.d/` on every host and set the CRI
registry `config_path` to that directory (containerd 2: `[plugins.'io.containerd.cri.v1.images'.registry]`).
Images of {", ".join(f"`{c.registry}`" for _, c in sorted(registry.proxy_cache.items()))} are then pulled
through Harbor's proxy caches at `{registry.hostname}`; each upstream stays the fallback, so pulls work
before Harbor runs.{trust}
""",
    )
