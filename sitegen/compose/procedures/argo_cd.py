"""Argo CD on the hub, applied from its rendered chart, then the root Application that hands it
everything."""

from __future__ import annotations

from constructs.argocd import FIELD_MANAGER
from sitegen.components.platform.argo_cd import ArgoCd
from sitegen.components.registry.harbor_config import HarborConfig
from sitegen.compose.apps import VariantApps
from sitegen.model import paths
from sitegen.tree.runbook import Runbook


def argo_cd(book: Runbook, apps: VariantApps) -> None:
    hub = apps.layout.hub
    book.part(f"Argo CD on `{hub.name}`")
    _install(book, apps)
    _root(book, apps)


def _install(book: Runbook, apps: VariantApps) -> None:
    site = apps.site
    hub = apps.layout.hub
    argo = apps.context(hub).get(ArgoCd)
    ns = argo.namespace
    groups = ", ".join(f"`{g}` ({r})" for g, r in sorted(site.gitops.argocd.rbac.items()))
    book.step(
        "Argo CD, rendered from its chart",
        f"""
```sh
kubectl apply --server-side --field-manager={FIELD_MANAGER} -n {ns} \\
  -f {paths.in_repo(paths.app_dir(apps.layout.name, hub.name, argo.name))}/
kubectl -n {ns} wait --for=condition=Available --timeout=10m deployment -l app.kubernetes.io/part-of=argocd
```

If `{site.gitops.repo_url}` needs credentials, create its repository Secret from the site vault now
(an ExternalSecret once External Secrets runs); none is stored here. Argo CD has no local admin: sign-in
is SSO only (`{site.gitops.argocd.sso.issuer}`, groups {groups}),
and works once the root has written the OIDC client secret from the vault; until then use kubectl.
Grafana signs in through the same provider (client `{site.services.monitoring.grafana_sso.client_id}`,
Admin and Viewer by the same groups, anyone else refused); its login form and basic auth are off, and
its local admin (`grafana/admin` in the vault) is break-glass only: `kubectl -n grafana exec deploy/grafana
-- grafana cli admin reset-admin-password ...` with `GF_AUTH_BASIC_ENABLED=true` set for the duration.
Harbor signs in through it too (client `{site.services.registry.sso_client_id}`, secret `harbor/oidc` in the
vault; members are made at their first login, and the group `{HarborConfig.oidc_settings(site)["oidc_admin_group"]}` are
Harbor's admins); its local `admin` (`harbor/admin`) stays for break-glass and the proxy-cache setup job.
""",
    )


def _root(book: Runbook, apps: VariantApps) -> None:
    hub = apps.layout.hub
    ns = apps.context(hub).get(ArgoCd).namespace
    bootstrap = paths.in_repo(paths.bootstrap_dir(apps.layout.name))
    spokes = "".join(
        f", then `root-{s.name}`, which does the same for `{s.name}` once Argo CD knows the cluster"
        for s in apps.layout.spokes
    )
    book.step(
        "The root Application",
        f"""
```sh
kubectl apply --server-side -f {bootstrap}/{ns}.appproject.bootstrap.yaml
kubectl apply --server-side -f {bootstrap}/{ns}.application.root.yaml
```

The root Application syncs `{bootstrap}/`: the locked `default` project, one project per team, the
foundation's Applications, one ApplicationSet per sync wave and project of `{hub.name}`'s apps{spokes}, wave by wave,
waiting until each is Healthy: an ApplicationSet is Healthy once every Application it generated (one
per component, from the `app.json` in its folder) is Synced and Healthy. The generated Applications
sync, prune and heal by themselves; Argo CD's credentials and the spoke registrations are the app
`{hub.name}-argocd-access`. From here on Argo CD owns everything, the CNI and itself included: its
Applications `{hub.name}-cilium` and `{hub.name}-argo-cd` adopt the objects applied above (same objects,
same field manager). The next
steps run while it syncs, each once the Application it names is Healthy.
""",
    )
