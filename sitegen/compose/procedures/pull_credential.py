"""Harbor's pull credential on every host: the proxy-cache projects are private, so containerd sends the
pull robot's basic auth (its secret from the vault) to Harbor; git holds a placeholder in its place."""

from __future__ import annotations

from constructs.registry import PULL_ROBOT, PULL_SECRET_KEY, ROBOT_PREFIX
from sitegen.components.registry.harbor_config import HarborConfig
from sitegen.compose.apps import VariantApps
from sitegen.compose.hosts import PULL_AUTH_PLACEHOLDER
from sitegen.model import paths
from sitegen.tree.runbook import Runbook

TITLE = "Harbor's pull credential on every host"


def pull_credential(book: Runbook, apps: VariantApps) -> None:
    registry = apps.site.services.registry
    kv = apps.site.secrets.vault.path
    mirrors = paths.in_repo(paths.mirrors_dir(apps.layout.name))
    book.step(
        TITLE,
        f"""
Harbor's proxy-cache projects are private: containerd pulls them as the robot `{ROBOT_PREFIX}{PULL_ROBOT}`
(pull on every project, nothing else), which the `harbor-config` Job keeps at the vault's secret
(`{HarborConfig.pull_vault_key}`, property `{PULL_SECRET_KEY}`: 8 to 128 characters with upper and lower case letters
and a digit, as Harbor asks). Until this step the hosts send the placeholder, Harbor refuses it and
containerd pulls from the upstream instead. On every host, as root, with a vault token that may read the
key (the admin's, once, not a cluster's):

```sh
auth=$(printf '%s:%s' '{ROBOT_PREFIX}{PULL_ROBOT}' "$(vault kv get -field={PULL_SECRET_KEY} {kv}/{HarborConfig.pull_vault_key})" | base64 -w0)
for f in {mirrors}/*/hosts.toml; do
  d=/etc/containerd/{paths.CERTS_D}/$(basename "$(dirname "$f")"); mkdir -p "$d"
  sed "s|{PULL_AUTH_PLACEHOLDER}|$auth|" "$f" > "$d/hosts.toml"; chmod 0600 "$d/hosts.toml"
done
```

`crictl pull {registry.hostname}/<project>/<image>` then answers from Harbor; a rotated secret
(`vault kv put`, then a sync of `harbor-config`) takes the same loop on every host.
""",
    )
