"""The RUNBOOK's day-2 part: maintenance budgets and procedures, growth, the GPU driver and
Kubernetes upgrades, the control plane's certificates, and etcd's backup and restore, each computed from the model (pool sizes, the
etcd quorum, AIStor's erasure layout, the model servers' nodes, the GPU Operator's upgrade policy).

Its headings carry no step number: the bring-up simulation replays numbered steps only.
"""

from __future__ import annotations

import shlex

from constructs.gpu_workload import BATCH_LABEL
from constructs.kube_vip import MANIFEST_DIR
from constructs.kubeadm import PATCHES_DIR
from sitegen.components.operator_steps import Stage
from sitegen.compose.apps import VariantApps
from sitegen.compose.ownership import KEEP_ON_DELETE, SYNC_OPTIONS
from sitegen.compose.procedures.component_steps import day2_sections
from sitegen.compose.procedures.replacement import replacements
from sitegen.compose.procedures.second_target import after_losing_aistor, restore_drill
from sitegen.model import paths
from sitegen.model.maintenance import Budget


def _batch(budget: Budget | None, nodes: int) -> int:
    """Nodes upgraded at once: within the budget, one when it allows none, never all."""
    if budget is None:
        return max(1, nodes // 10)  # no promise to keep: a tenth, so the services' PDBs find room
    return max(1, min(budget.down, nodes - 1))


def day2(apps: VariantApps) -> str:
    site = apps.site
    layout = apps.layout
    minor = site.versions.kubernetes_minor
    major, number = minor.lstrip("v").split(".")
    nxt = f"v{major}.{int(number) + 1}"
    out = [
        "## Day 2: maintenance, growth and upgrades\n",
        "Every number below comes from the model (`sitegen plan` prints the same budgets); a change of a "
        "pool's size, the etcd membership or AIStor's layout changes them.\n",
    ]
    for cluster in layout.clusters:
        budgets = apps.context(cluster).pool_budgets
        lines = [f"### Maintenance budgets on `{cluster.name}`\n"]
        for pool, budget in budgets:
            which = f"servers of {pool.name}" if "/" in budget.pool else f"of {pool.host_span}"
            lines.append(
                f"- `{budget.pool}` ({budget.nodes} {which}): at most **{budget.down}** down at once ({budget.why})"
            )
        kept = {p.name for p, _ in budgets}
        others = [p.name for p in cluster.worker_pools if p.name not in kept]
        if others:
            lines.append(
                f"- {', '.join(f'`{o}`' for o in others)}: no promise beyond their services' "
                "PodDisruptionBudgets; drain one node at a time"
            )
        out.append("\n".join(lines) + "\n")
    out += _procedures(apps)
    out.append(_kubernetes_upgrade(apps, minor, nxt))
    out.append(_control_plane_certificates(apps))
    out.append(_pruning(apps))
    out.append(_gitops_alerts(apps))
    out += day2_sections(apps, Stage.DAY_2_BACKUPS)
    out.append(restore_drill(apps))
    out.append(after_losing_aistor(apps))
    out += day2_sections(apps, Stage.DAY_2)
    return "\n".join(out)


def _procedures(apps: VariantApps) -> list[str]:
    return [
        *_gpu_node_out(apps),
        *day2_sections(apps, Stage.DAY_2_REPAIRS),
        _adding_hosts(apps),
        _removing_hosts(apps),
        *replacements(apps),
    ]


def _gpu_node_out(apps: VariantApps) -> list[str]:
    """Taking a node of the first GPU pool out (none without one)."""
    layout = apps.layout
    gpu = next(((c, p) for c in layout.clusters for p in c.worker_pools if p.hardware.gpu), None)
    if gpu is None:
        return []
    cluster, pool = gpu
    budget = dict((b.pool, b) for _, b in apps.context(cluster).pool_budgets)[pool.name]
    return [
        f"""### Taking a GPU node out (`{cluster.name}`, pool {pool.name})

A multi-node job loses every rank when one node goes: never drain a node with batch pods on it. Cordon
it (Kueue admits nothing new there), wait until its `{BATCH_LABEL}=true` pods have finished, then
drain; a model server moves and Kueue readmits it where the quota has room. At most {budget.down} of
the {budget.nodes} nodes at once ({budget.why}); a job that needs every node waits until all are back.

```sh
kubectl cordon <node>
kubectl get pods -A -l {BATCH_LABEL}=true --field-selector spec.nodeName=<node>   # repeat until empty
kubectl drain <node> --ignore-daemonsets --delete-emptydir-data --timeout=30m
kubectl uncordon <node>   # after the repair, once the node is Ready
```

Away for longer (a chassis sent for repair): after the drain, `kubectl delete node <node>`. While it is
registered, every DaemonSet that should run there (the GPU Operator's, node-exporter, the CSI and
fabric agents) misses a pod, and Argo CD keeps those apps Progressing: nothing else waits on them, but
their alerts and a changed ApplicationSet of theirs do. The repaired host's kubelet registers it again
with its pool's taints (its join configuration); the node labeler gives back its labels; burn it in
before the uncordon. A host that comes back rebuilt (a new OS disk) joins anew: Rebuilding a host of
pool `{pool.name}`.

GPU driver upgrades follow the same rule without you: the GPU Operator's upgrade policy takes one node
at a time and only once the `{BATCH_LABEL}=true` pods on it have completed (no timeout), so a driver
change never kills a running step; a new driver version is a change of `versions.yaml` and a sync.
"""
    ]


def _adding_hosts(apps: VariantApps) -> str:
    layout = apps.layout
    folders = ", ".join(
        f"`{paths.in_repo(paths.kubeadm_dir(layout.name, c.name))}/`" for c in layout.clusters
    )
    return f"""### Adding hosts

Add them to their pool in `config/pools.yaml` (storage hosts also as a new server pool), synth, review
and merge. On each new host run its pool's join step from the bring-up above with the regenerated files
({folders}); `node-labels` labels it, and Argo CD syncs what changed (a new ObjectStore pool, larger
quotas). Joined hosts keep their names and addresses: synth refuses a renamed or readdressed host, and
a control-plane member that disappears unless `config/clusters.yaml` `replaced_members` names the host
taking its place (the RUNBOOK then has the move's steps). Growth keeps what clients and hosts already
use (S3 front doors, the load-balancer pool, the rails' IP blocks, the API endpoints): a change that
must move one is refused, and printed, until `config/gitops.yaml` `acknowledged_moves` lists it; then
redo on the running hosts and clients what uses the moved address or name.
"""


def _removing_hosts(apps: VariantApps) -> str:
    """A worker host retired for good; what each kind of pool asks before it goes. Not replayed by the
    bring-up (its day 2 rebuilds hosts, it removes none)."""
    site = apps.site
    cache = [
        p.name
        for c in apps.layout.clusters
        for p in c.worker_pools
        if p.name in site.storage.local_cache.pools
    ]
    gpu = sorted({p.name for c in apps.layout.clusters for p in c.worker_pools if p.hardware.gpu})
    notes = [
        f"- Pools {', '.join(sorted(set(cache)))}: the volumes on its local NVMe (`local-nvme`) go with it. A pod "
        "bound to one stays Pending once evicted (TopoLVM's volume is on this node): `sitegen plan` lists "
        "what each component keeps there and where its copy is; once nothing is left to copy, delete the "
        "pod's claim so that it starts on another node."
        if cache
        else "",
        f"- Pools {', '.join(gpu)}: take it out as in Taking a GPU node out first (its batch pods finish, its "
        "model servers move)."
        if gpu
        else "",
        f"- Pool {site.storage.aistor.pool}: a server never leaves an erasure-coded server pool alone; AIStor "
        "retires whole server pools (`mc admin decommission start`), then the pool leaves `storage.yaml`.",
        "- The control plane: a member is replaced, not removed (`config/clusters.yaml` `replaced_members`).",
    ]
    return f"""### Removing a host

A worker host retired for good (not rebuilt). From the admin host, its pods move where their
PodDisruptionBudgets let them:

```sh
kubectl cordon <host>
kubectl drain <host> --ignore-daemonsets --delete-emptydir-data --timeout=30m
kubectl delete node <host>
```

Then `kubeadm reset -f` on the host, and in `config/pools.yaml` its number in its pool's `skip:` (the
other hosts keep their names and addresses), synth, review and merge.

{chr(10).join(n for n in notes if n)}
"""


def _kubernetes_upgrade(apps: VariantApps, minor: str, nxt: str) -> str:
    packages = apps.site.hosts.packages
    source, revision = shlex.quote(packages.kubernetes_source(nxt)), packages.kubernetes_revision
    rows = []
    for cluster in apps.layout.clusters:
        found = apps.context(cluster).pool_budgets
        budgets = {p.name: b for p, b in found if "/" not in b.pool}
        aistor = [b for _, b in found if "/" in b.pool]
        cp = cluster.control_plane
        rows.append(
            f"- `{cluster.name}`: control plane {cp.host_span} one at a time (etcd keeps quorum "
            f"{len(cp.hosts) // 2 + 1} of {len(cp.hosts)}); then"
        )
        order = sorted(
            cluster.worker_pools,
            key=lambda p: (p.hardware.gpu is not None, p.name == apps.site.storage.aistor.pool),
        )
        for pool in order:
            if aistor and pool.name == apps.site.storage.aistor.pool:
                size = min(_batch(b, b.nodes) for b in aistor)
            else:
                size = _batch(budgets.get(pool.name), len(pool.hosts))
            rows.append(f"  - pool `{pool.name}` ({len(pool.hosts)} nodes): {size} at a time")
    return f"""### Upgrading Kubernetes ({minor} to {nxt})

One minor at a time, control plane first, then the worker pools: system pool first, GPU nodes last
(their batch jobs are waited for as above); batches stay inside the budgets:

{chr(10).join(rows)}

Before: every Application Synced and Healthy; `sitegen validate` passes with the new version pinned in
`versions.yaml`; an etcd snapshot taken (below); no node NotReady. The packages come first: the
baseline holds kubeadm, kubelet and kubectl at {minor}, from the mirror's {minor} repository, and a
kubeadm of {minor} refuses to upgrade a cluster to {nxt}. Then `--patches` on every `kubeadm upgrade`:
the per-node patches (etcd's metrics address, the pool's kubelet reservations) live in `{PATCHES_DIR}`
and are part of no configuration kubeadm keeps in the cluster, so an upgrade without them writes
etcd's manifest and the kubelet's configuration without them. Per control-plane node, then per worker
in its batch, with `NEXT` the {nxt} patch release to go to (`NEXT={nxt.lstrip("v")}.0`; its packages `$NEXT-{revision}`);
pin it in `versions.yaml` once every node runs it, so that hosts joining later join at it:

```sh
echo {source} > /etc/apt/sources.list.d/kubernetes.list
apt-get update
apt-mark unhold kubeadm && apt-get install -y kubeadm="$NEXT-{revision}" && apt-mark hold kubeadm
kubeadm upgrade plan                       # first control-plane node only
kubeadm upgrade apply "v$NEXT" --patches {PATCHES_DIR}   # first control-plane node
kubeadm upgrade node --patches {PATCHES_DIR}   # every other node, control plane and workers
kubectl drain <node> --ignore-daemonsets --delete-emptydir-data
apt-mark unhold kubelet kubectl && apt-get install -y kubelet="$NEXT-{revision}" kubectl="$NEXT-{revision}" && apt-mark hold kubelet kubectl
systemctl daemon-reload && systemctl restart kubelet
kubectl uncordon <node>
```
"""


def _control_plane_certificates(apps: VariantApps) -> str:
    """kubeadm's certificates last a year and renew only with an upgrade or by hand; the static pods
    read theirs at start (kubeadm's Certificate Management: restart them by their manifests)."""
    members = [
        f"- `{c.name}`: {c.control_plane.host_span}, one at a time (etcd keeps quorum "
        f"{len(c.control_plane.hosts) // 2 + 1} of {len(c.control_plane.hosts)})"
        for c in apps.layout.clusters
    ]
    return f"""### The control plane's certificates

kubeadm's certificates (the API server's, etcd's, the front proxy's, and those in `admin.conf`,
`controller-manager.conf`, `scheduler.conf` and the first node's `super-admin.conf`) last one year; each `kubeadm upgrade`
renews them, so a cluster upgraded within the year never sees one end (the kubelets rotate their own;
the cluster CAs last ten years). Otherwise `KubeClientCertificateExpiration` fires from a week before
the controller manager's and the scheduler's end, which the others end with. Renew them on each
control-plane node, `<node>` its name:

{chr(10).join(members)}

```sh
kubeadm certs check-expiration
kubeadm certs renew all
# the static pods read their certificates at start: the kubelet stops each whose manifest goes
# (it looks every 20 s) and starts it again once the manifest is back; kube-vip with them
mkdir -p /etc/kubernetes/manifests-restart
mv {MANIFEST_DIR}/*.yaml /etc/kubernetes/manifests-restart/ && sleep 40
mv /etc/kubernetes/manifests-restart/*.yaml {MANIFEST_DIR}/ && sleep 40
kubectl --kubeconfig /etc/kubernetes/admin.conf -n kube-system wait --for=condition=Ready --timeout=10m \
  pod/etcd-<node> pod/kube-apiserver-<node> pod/kube-controller-manager-<node> pod/kube-scheduler-<node>
```

Then copy the renewed `/etc/kubernetes/admin.conf` to whoever used the old one (its certificate is new).
"""


def _pruning(apps: VariantApps) -> str:
    namespace = apps.site.gitops.argocd.namespace
    keep = ",".join(KEEP_ON_DELETE)
    return f"""### Removing objects, apps and clusters

Every Application prunes what a commit removes from its folder, except objects marked
`{SYNC_OPTIONS}: {keep}` (CRDs, Namespaces, claims and volumes, the ObjectStore): deleting one takes its
data, or every custom resource of its kind, with it. Those stay; the app shows them as requiring
pruning and stays OutOfSync (the `ArgoCdAppOutOfSync` alert). Once nothing needs one, delete it
deliberately:

```sh
argocd app diff <app>                    # what requires pruning
kubectl delete <kind> <name>             # after review: its data goes with it
```

Removing an app or a cluster from `config/` (or renaming one): synth refuses until `config/gitops.yaml`
`acknowledged_removals` lists the Applications that go (`sitegen diff` shows each with what it holds).
Their ApplicationSet deletes them without their objects (no resources finalizer; no delete hook is
shipped), so nothing is lost by accident: a renamed app adopts its objects, a removed one leaves them
running unmanaged until you delete them:

```sh
kubectl get $(kubectl api-resources --verbs=list -o name | paste -sd, -) -A -o json \\
  | jq -r '.items[] | select((.metadata.annotations["argocd.argoproj.io/tracking-id"] // "") | startswith("<app>:"))
           | "\\(.kind) \\(.metadata.namespace // "-") \\(.metadata.name)"'
kubectl -n {namespace} get application <app>   # gone: its ApplicationSet deleted it
```
"""


def _gitops_alerts(apps: VariantApps) -> str:
    namespace = apps.site.gitops.argocd.namespace
    return f"""### When Argo CD alerts

Every Application syncs, prunes and heals itself; the roots order only the first install. So an alert
names one app, and nothing else waits on it (but its ApplicationSet, when its root applies a change of
that set: the root then waits on the set until the app is back).

- `ArgoCdAppOutOfSync`: `argocd app diff <app>` shows what differs. A field that keeps coming back
  is written by a controller: leave it out of Git or ignore it (`Component.writes`). An object waiting
  to be pruned is marked `Prune=false` (above: removing objects).
- `ArgoCdSyncFailed`: `argocd app get <app>` shows the failed operation. An app retries (10 times,
  backoff to 5 minutes), then waits for the next commit; after a fix in the cluster, `argocd app sync
  <app>`.
- `ArgoCdAppUnhealthy`: `argocd app get <app>` names the object. A DaemonSet missing a pod on a node
  that is down keeps its app Progressing until the node returns or is deleted (Taking a GPU node out).
- `ArgoCdApplicationSetError`: `kubectl -n {namespace} get applicationset <set> -o
  jsonpath='{{.status.conditions}}'`. A cluster not registered yet (its token and CA not in the vault:
  Argo CD's credential) keeps its sets from generating, and its root waits on them. If a root must go
  on without a set, `argocd app terminate-op <root>` ends its operation; the next commit starts another.
- `ExternalSecretNotReady`: `kubectl -n <namespace> describe externalsecret <name>`: the vault key or
  the store's role.
- `CertificateNotReady`, `CertificateExpiresSoon`: `kubectl -n <namespace> describe certificate
  <name>`, then its CertificateRequest and issuer.
"""
