"""containerd registry mirrors: every node pulls the upstream registries through Harbor's proxy caches.

One `hosts.toml` per upstream (containerd's `config_path` layout). The upstream stays the fallback, so
nodes pull before Harbor exists (bootstrap) and while it is down.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import urlparse

from sitegen.dist import OutputFile
from sitegen.model import ProxyCache, Site

CERTS_D = "certs.d"
# Docker Hub's web URL is what Harbor's endpoint takes; images are named docker.io/... and pulled from here.
DOCKER_HUB = ("docker.io", "https://registry-1.docker.io")


def upstream(cache: ProxyCache) -> tuple[str, str]:
    """(the registry name images carry, its API endpoint)."""
    if cache.type == "docker-hub":
        return DOCKER_HUB
    return urlparse(cache.url).hostname or cache.url, cache.url


def mirror_files(site: Site, variant: str) -> list[OutputFile]:
    registry = site.services.registry
    files = []
    for project, cache in sorted(registry.proxy_cache.items()):
        name, server = upstream(cache)
        header = f"registry.proxy_cache.{project} of config/services.yaml.\nOn every host: /etc/containerd/{CERTS_D}/{name}/hosts.toml"
        text = (
            f'server = "{server}"\n'
            "\n"
            f'[host."https://{registry.hostname}/v2/{project}"]\n'
            '  capabilities = ["pull", "resolve"]\n'
            "  override_path = true\n"
        )
        files.append(
            OutputFile(
                PurePosixPath(variant, "containerd", CERTS_D, name, "hosts.toml"), [], header, text=text
            )
        )
    return files
