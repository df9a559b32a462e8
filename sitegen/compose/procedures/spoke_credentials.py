"""Argo CD's credential for each spoke: a token of the spoke's manager service account, kept in the
vault only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs.cluster_manager import NAME as ACCOUNT
from sitegen.components.platform.argocd_manager import ArgocdManager
from sitegen.compose.apps import VariantApps
from sitegen.model import ClusterLayout, paths
from sitegen.tree.runbook import Runbook


def spoke_credentials(
    book: Runbook, apps: VariantApps, by_cluster: Mapping[str, list[dict[str, Any]]]
) -> None:
    for spoke in apps.layout.spokes:
        _credential(book, apps, spoke, by_cluster[spoke.name])


def _bindable(docs: list[dict[str, Any]]) -> list[str]:
    """The roles the spoke's manager may bind (its ClusterRole's bind rule)."""
    return sorted(
        name
        for d in docs
        if d.get("kind") == "ClusterRole" and d["metadata"]["name"] == ACCOUNT
        for rule in d.get("rules") or []
        if "bind" in (rule.get("verbs") or [])
        for name in rule.get("resourceNames") or []
    )


def _credential(book: Runbook, apps: VariantApps, spoke: ClusterLayout, docs: list[dict[str, Any]]) -> None:
    site = apps.site
    manager = apps.context(spoke).get(ArgocdManager)
    power = (
        "It may bind only the roles those apps render or bind, and one of them is `cluster-admin`: "
        "this token is as strong as cluster-admin on the cluster; it lives in the vault only."
        if "cluster-admin" in _bindable(docs)
        else "It may bind only the roles those apps render or bind: no cluster-admin."
    )
    kv = site.secrets.vault.path
    days = site.gitops.argocd.spoke_token_days
    folder = paths.in_repo(paths.app_dir(apps.layout.name, spoke.name, manager.name))
    book.step(
        f"Argo CD's credential for `{spoke.name}`",
        f"""
Argo CD manages `{spoke.name}` as the service account `{manager.namespace}/{ACCOUNT}`, whose ClusterRole
names the kinds the spoke's Applications render. {power} With kubectl against
`{spoke.name}`, its API CA in `{spoke.name}-ca.crt` and the vault as above, issue a token that expires
after {days} days (`gitops.argocd.spoke_token_days`):

```sh
kubectl apply --server-side -f {folder}/
kubectl -n {manager.namespace} create token {ACCOUNT} --duration={days * 24}h > {spoke.name}-token
base64 -w0 {spoke.name}-ca.crt > {spoke.name}-ca.b64
vault kv put {kv}/argocd/clusters/{spoke.name} token=@{spoke.name}-token caData=@{spoke.name}-ca.b64
rm {spoke.name}-token
```

To rotate it, run the last four lines again before it expires: External Secrets rewrites Argo CD's
cluster Secret within an hour and the old token lapses at its expiry. To revoke every token at once,
delete the service account, apply the folder again and issue a new token as above.
""",
    )
