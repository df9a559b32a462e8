"""The second backup target (services.backups.second): where it answers S3, its CA in a consumer's
namespace, and the flow to it. PowerScale's S3 is its access zone's SmartConnect name on OneFS's TLS
port; any other target is named in config."""

from __future__ import annotations

from constructs import Construct
from constructs.secrets import VaultSecret
from sitegen.components.flows import WORLD, Flow
from sitegen.components.s3 import S3Endpoint, backup_target_folder
from sitegen.model import Site
from sitegen.model.services import POWERSCALE_S3_PORT

CA_SECRET = "backup-target-ca"  # the second target's CA, in each consumer's namespace


def _host_port(site: Site) -> tuple[str, int]:
    second = site.services.backups.second
    if second.s3 == "powerscale":
        return site.storage.powerscale.smartconnect, POWERSCALE_S3_PORT
    return second.s3.host, second.s3.port


def second_endpoint(site: Site) -> S3Endpoint:
    host, port = _host_port(site)
    return S3Endpoint(host if port == 443 else f"{host}:{port}", site.services.backups.second.region)


def second_flow(site: Site, why: str) -> Flow:
    return Flow(WORLD, (_host_port(site)[1],), why)


def second_ca_secret(scope: Construct, id: str, *, site: Site, namespace: str, store: str) -> None:
    """The CA of the second target's certificate as the Secret `backup-target-ca`."""
    VaultSecret(
        scope, id, name=CA_SECRET, namespace=namespace, store=store,
        key=f"{backup_target_folder(site.services.backups.second.name)}/ca", properties=["ca.crt"],
    )  # fmt: skip
