"""`velero-config`: Velero's keys to AIStor and to the second backup target (the AWS plugin's `cloud`
file) and their CAs, from the vault, in Velero's namespace before its server starts (its pod mounts the keys)."""

from __future__ import annotations

from constructs import Construct
from constructs.secrets import VaultSecret
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext
from sitegen.components.platform.secret_store import SecretStore
from sitegen.components.s3 import S3Access, S3Grant
from sitegen.components.second_target import second_ca_secret
from sitegen.components.storage import PROJECT
from sitegen.components.storage.aistor import ca_secret
from sitegen.components.storage.velero import Velero
from sitegen.components.storage.velero_objects import CREDENTIALS, NAMESPACE, PREFIX, second_credentials

S3_USER = "velero"
CLOUD_FILE = "[default]\naws_access_key_id={{ .access_key }}\naws_secret_access_key={{ .secret_key }}\n"


class VeleroConfig(RenderedComponent):
    name = "velero-config"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (SecretStore,)
    before = (Velero,)
    namespace = NAMESPACE
    skip_dry_run = True  # ExternalSecret: its CRD arrives with External Secrets
    talks_to_api = False

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        # Velero reads (restores) and deletes (expired backups: delete markers under the lock) its own
        # prefix, one folder per cluster below it
        return [S3Access(S3_USER, (S3Grant(ctx.site.services.backups.bucket, f"{PREFIX}/"),))]

    def second_copy(self, ctx: ClusterContext) -> list[S3Access]:
        second = ctx.site.services.backups.second
        return [S3Access(S3_USER, (S3Grant(second.bucket_of(PREFIX), f"{PREFIX}/"),), target=second.name)]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        (access,) = self.s3_access(ctx)
        (second,) = self.second_copy(ctx)
        for id, name, key in (
            ("Credentials", CREDENTIALS, access.vault_key),
            ("SecondCredentials", second_credentials(ctx), second.vault_key),
        ):
            VaultSecret(
                scope, id, name=name, namespace=self.namespace, store=ctx.store, key=key,
                properties=["access_key", "secret_key"], template={"cloud": CLOUD_FILE},
            )  # fmt: skip
        ca_secret(scope, namespace=self.namespace, store=ctx.store)
        second_ca_secret(scope, "SecondCA", site=ctx.site, namespace=self.namespace, store=ctx.store)
