"""containerd registry mirrors: every node pulls the upstream registries through Harbor's proxy caches.

One `hosts.toml` per upstream (containerd's `config_path` layout). The upstream stays the fallback, so
nodes pull before Harbor exists (bootstrap) and while it is down.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sitegen.dist import OutputFile
from sitegen.model import Site

CERTS_D = "certs.d"


def mirror_files(site: Site, variant: str) -> list[OutputFile]:
    registry = site.services.registry
    files = []
    for project, cache in sorted(registry.proxy_cache.items()):
        header = (
            f"registry.proxy_cache.{project} of config/services.yaml.\n"
            f"On every host: /etc/containerd/{CERTS_D}/{cache.registry}/hosts.toml"
        )
        text = (
            f'server = "{cache.api}"\n'
            "\n"
            f'[host."https://{registry.hostname}/v2/{project}"]\n'
            '  capabilities = ["pull", "resolve"]\n'
            "  override_path = true\n"
        )
        path = PurePosixPath(variant, "containerd", CERTS_D, cache.registry, "hosts.toml")
        files.append(OutputFile(path, [], header, text=text))
    return files
