"""The primary CNI, Cilium, applied from its rendered chart before any pod can start."""

from __future__ import annotations

from sitegen.components.networking.cilium import Cilium
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.argo_cd import FIELD_MANAGER
from sitegen.compose.procedures.book import Runbook
from sitegen.model import ClusterLayout, paths


def cni(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    app_dir = paths.in_repo(paths.cluster_apps_dir(apps.layout.name, cluster.name))
    cilium = apps.context(cluster).get(Cilium)
    book.step(
        "Primary CNI: Cilium, rendered from its chart",
        f"""
No pod, Argo CD included, starts before the CNI. The folder holds every object of the chart at its
pinned version, rendered with the generated values; no Helm is needed here. The field manager is Argo
CD's, so its Application adopts the objects without conflicts.

```sh
kubectl apply --server-side --field-manager={FIELD_MANAGER} -n {cilium.namespace} -f {app_dir}/{cilium.name}/
kubectl wait --for=condition=Ready --timeout=15m nodes --all
```
""",
    )
