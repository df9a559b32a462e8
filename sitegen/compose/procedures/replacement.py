"""Day 2: hosts that come back rebuilt. A control-plane member replaced on the same name and address, a
member moved to another host (`clusters.yaml` `replaced_members`), and a worker of each pool rebuilt
(a GPU node back from repair burns in first; a storage server finds its drives). Each starts from an
empty host: its baseline, its files, a token and (on the control plane) the certificates made anew,
since the ones of day 1 expired two hours after the init.

The sections name the host by a placeholder (`<member>`, `<node>`) but for a move, whose hosts the
config names; the bring-up simulation replays each on a host it empties (check/bringup/rebuild.py).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from constructs.gpu_health import burn_in_name, pair_name
from constructs.gpu_workload import BATCH_LABEL
from sitegen.components.gpu.gpu_health import GpuHealth
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.control_plane import (
    CA_CERT_HASH,
    JOIN_VALUES,
    api_server_files,
    control_plane_join,
    pki_recipient,
    store_join_values,
)
from sitegen.compose.procedures.nodes import label_nodes, volume_group
from sitegen.compose.procedures.pull_credential import TITLE as PULL_CREDENTIAL
from sitegen.compose.procedures.workers import JOIN_TOKEN_TTL, join_token, worker_join
from sitegen.model import ClusterLayout, PoolLayout, paths
from sitegen.tree.runbook import JOBS_DONE_FUNCTION, jobs_done

MEMBER = "<member>"
HEALTHY = "<healthy member>"
NODE = "<node>"
ADDRESS = "<address>"
BEFORE = "<before>"  # a GPU node's neighbour in its pool's ring
ETCD_FLAGS = (
    "--endpoints=https://127.0.0.1:2379 \\\n  --cacert=/etc/kubernetes/pki/etcd/ca.crt "
    "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \\\n  --key=/etc/kubernetes/pki/etcd/healthcheck-client.key"
)


def replace_title(cluster: str) -> str:
    return f"Replacing a control-plane member of `{cluster}`"


def move_title(cluster: str, old: str, new: str) -> str:
    return f"Moving control-plane member {old} to {new} (`{cluster}`)"


def rebuild_title(cluster: str, pool: str) -> str:
    return f"Rebuilding a host of pool `{pool}` (`{cluster}`)"


def etcdctl(member: str, command: str) -> str:
    """etcdctl in the etcd pod of a member (the image kubeadm runs carries it)."""
    return f"kubectl -n kube-system exec etcd-{member} -- etcdctl {ETCD_FLAGS} {command}"


def replacements(apps: VariantApps) -> list[str]:
    out = []
    for cluster in apps.layout.clusters:
        out.append(_replace_member(apps, cluster))
        members = {h.name for h in cluster.control_plane.hosts}
        for old, new in sorted(cluster.spec.replaced_members.items()):
            if new in members:
                out.append(_move_member(apps, cluster, old, new))
        out += [_rebuild_worker(apps, cluster, pool) for pool in cluster.worker_pools]
    return out


def _kdir(apps: VariantApps, cluster: ClusterLayout) -> PurePosixPath:
    return paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))


def _baseline(apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout, host: str) -> str:
    """The rebuilt host's baseline (step "The host baseline"), one host of a pool."""
    kdir = _kdir(apps, cluster)
    ansible = paths.in_repo(paths.ansible_dir(apps.layout.name))
    return f"""The host, rebuilt from the site's image, takes the baseline of pool {pool.name}
(`ansible-playbook -i {ansible}/inventory.yml {ansible}/site.yml --tags baseline,mirrors --limit {host}`
does the same), then the loop of step "{PULL_CREDENTIAL}":

```sh
bash {kdir}/host-prep-{pool.name}.sh
reboot
bash {kdir}/host-preflight-{pool.name}.sh
```"""


def _certificates(apps: VariantApps, cluster: ClusterLayout, on: str, why: str) -> str:
    """A token and the control plane's certificates uploaded again, on a member, into the vault."""
    return f"""On {on}, a token and the control plane's certificates uploaded again under a new key (those of the
init expired two hours after it), with the CA's hash, into the vault ({why}):

```sh
{join_token(why)}
export KUBEADM_CERTIFICATE_KEY="$(kubeadm certs certificate-key)"
kubeadm init phase upload-certs --upload-certs --certificate-key "$KUBEADM_CERTIFICATE_KEY"
{CA_CERT_HASH}
{store_join_values(apps.site, cluster, *JOIN_VALUES)}
```

The key decrypts the uploaded certificates for {JOIN_TOKEN_TTL}: the vault holds it, never a ticket or a chat."""


def _replace_member(apps: VariantApps, cluster: ClusterLayout) -> str:
    kdir = _kdir(apps, cluster)
    cp = cluster.control_plane
    members = len(cp.hosts)
    return f"""### {replace_title(cluster.name)}

A control-plane host lost for good (its disk, its board) comes back rebuilt under its name and address,
one member at a time and only while etcd keeps its quorum ({members // 2 + 1} of {members}). Its
member stays in etcd until it is removed, and etcd refuses a new member at the address of one it has, so
the lost member goes first; the host then joins as on day 1, with a token and certificates made
anew. Take an etcd snapshot first (below). With `{MEMBER}` the lost member and `{HEALTHY}` another:

```sh
{etcdctl(HEALTHY, "member list -w table")}
{etcdctl(HEALTHY, f"member remove <ID of {MEMBER}>")}
kubectl delete node {MEMBER}
```

(A member whose host still runs leaves by `kubeadm reset -f` on it, which removes its etcd member.)

{_baseline(apps, cluster, cp, MEMBER)}

On the host, the API server's files with the cluster's encryption key from the vault (the key of
day 1: a new one reads none of the Secrets in etcd):

```sh
{api_server_files(apps.site, cluster, kdir)}
{pki_recipient(apps.site)}
```

{_certificates(apps, cluster, HEALTHY, f"replace {MEMBER}")}

On the host, the join:

```sh
{control_plane_join(apps.site, kdir, cluster, MEMBER)}
```

Then `member list` (the first command above) lists {members} started members, none a learner.
"""


def _move_member(apps: VariantApps, cluster: ClusterLayout, old: str, new: str) -> str:
    kdir = _kdir(apps, cluster)
    cp = cluster.control_plane
    members = len(cp.hosts)
    healthy = next(h.name for h in cp.hosts if h.name != new)
    carve = apps.site.variants[apps.layout.name].clusters[cluster.name].control_plane
    source = carve.from_pool if carve else cluster.control_plane.name
    came_from = next(
        (
            f"pool {source} of `{c.name}`"
            for c in apps.layout.clusters
            if c is not cluster and any(p.name == source for p in c.pools)
        ),
        f"pool {source}",
    )
    goes_to = next(
        ((c, p) for c in apps.layout.clusters for p in c.worker_pools if any(h.name == old for h in p.hosts)),
        None,
    )
    after = (
        f"{old} is a host of pool {goes_to[1].name} of `{goes_to[0].name}` now: rebuild it as one "
        f"({rebuild_title(goes_to[0].name, goes_to[1].name)})."
        if goes_to
        else f"{old} is in no cluster of this variant any more: it leaves the site."
    )
    return f"""### {move_title(cluster.name, old, new)}

`config/clusters.yaml` `{cluster.name}.replaced_members` moves the etcd member of {old} to {new}. Once the
change is merged (the files of {new} are in `{kdir}/` from then on) and an etcd snapshot is taken (below):
{new} joins first and {old} leaves after, so etcd never has fewer than {members} members
({members + 1} for the time between, a learner until it caught up). If {new} runs as a node (a host
of {came_from} before): drain it there, delete its Node there, and `kubeadm reset -f` on it.

{_baseline(apps, cluster, cp, new)}

On {new}, the API server's files with the cluster's encryption key from the vault:

```sh
{api_server_files(apps.site, cluster, kdir)}
{pki_recipient(apps.site)}
```

{_certificates(apps, cluster, healthy, f"move {old} to {new}")}

On {new}, the join:

```sh
{control_plane_join(apps.site, kdir, cluster, new)}
```

Then {old} leaves: its services move, `kubeadm reset -f` on it removes its etcd member, and its Node
goes:

```sh
kubectl drain {old} --ignore-daemonsets --delete-emptydir-data --timeout=30m
kubeadm reset -f   # on {old}
kubectl delete node {old}
{etcdctl(healthy, "member list -w table")}
```

The list shows {members} started members, none of them {old}. {after} The entry of `replaced_members`
may go once the move is done.
"""


def _rebuild_worker(apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout) -> str:
    kdir = _kdir(apps, cluster)
    site = apps.site
    gpu = pool.hardware.gpu is not None and apps.context(cluster).has(GpuHealth)
    cordon = f"kubectl cordon {NODE}   # no work before its burn-in\n" if gpu else ""
    return f"""### {rebuild_title(cluster.name, pool.name)}

A host of pool {pool.name} rebuilt (a new OS disk, a board, a chassis back from repair) under its
name and address. Drain it if it still runs, then delete its Node: the new kubelet registers it again.
With `{NODE}` the host and `{ADDRESS}` its address (from the header of `join-{pool.name}.yaml`):

```sh
kubectl drain {NODE} --ignore-daemonsets --delete-emptydir-data --timeout=30m   # if it still runs
kubectl delete node {NODE}
```

{_baseline(apps, cluster, pool, NODE)}{_rails_and_cache(apps, cluster, pool)}

On a control-plane node, a token of its own, into the vault:

```sh
{join_token(f"rebuild {NODE}")}
{store_join_values(site, cluster, "KUBEADM_TOKEN")}
```

On the host, the join:

```sh
{worker_join(site, cluster, kdir, pool, NODE, ADDRESS)}
```

From the admin host, its labels at once (the node labeler would within its schedule):

```sh
{cordon}{label_nodes(pool, [NODE])}
```{_after_labels(apps, pool, gpu)}
"""


def _rails_and_cache(apps: VariantApps, cluster: ClusterLayout, pool: PoolLayout) -> str:
    """The rebuilt host's fabric preparation and local cache's volume group, where its pool has them."""
    kdir = _kdir(apps, cluster)
    site = apps.site
    fabric = (
        f"""

Its rails, as on day 1 (step "Fabric preparation: pool {pool.name}"):

```sh
bash {kdir}/fabric-prep-{pool.name}.sh
bash {kdir}/fabric-preflight-{pool.name}.sh
```"""
        if pool.name in site.fabric.nics
        else ""
    )
    cache = site.storage.local_cache
    if pool.name in cache.pools:
        fabric += f"""

Its local NVMe cache's volume group (step "Local NVMe cache"), over its empty cache drives:

```sh
{volume_group(apps.layout.name, cluster, pool)}
```"""
    return fabric


def _after_labels(apps: VariantApps, pool: PoolLayout, gpu: bool) -> str:
    """What the rebuilt host does before any work: an AIStor server finds its drives, a GPU node burns
    in; other hosts nothing."""
    if pool.name == apps.site.storage.aistor.pool:
        return f"""

Its drives: those moved from the failed chassis keep what the volume manager wrote on them and list
as Ready again; only new drives are initialized (Replacing an AIStor drive or server). Its server pod,
bound to its drives, starts on it:

```sh
kubectl directpv list drives --nodes {NODE}
```"""
    return _burn_in(pool) if gpu else ""


def _burn_in(pool: PoolLayout) -> str:
    burn_in, pair = burn_in_name(NODE), pair_name(BEFORE, NODE)
    return f"""

Its burn-in before any work (step "GPU burn-in: pool {pool.name}"): the Jobs of its last one go first,
then its DCGM diagnostics; then its pair test with `{BEFORE}`, the node before it in the pool's ring,
whose links are known good: taken out for the test as any GPU node (Taking a GPU node out: its batch
pods finish first, its model servers move), so a slow result is the rebuilt node's.

```sh
kubectl -n {GpuHealth.namespace} delete job --ignore-not-found {burn_in} {pair}
{JOBS_DONE_FUNCTION}
kubectl -n {GpuHealth.namespace} create job {burn_in} --from=cronjob/{burn_in}
{jobs_done(GpuHealth.namespace, GpuHealth.burn_in_seconds, [burn_in])}
kubectl cordon {BEFORE}
kubectl get pods -A -l {BATCH_LABEL}=true --field-selector spec.nodeName={BEFORE}   # repeat until empty
kubectl drain {BEFORE} --ignore-daemonsets --delete-emptydir-data --timeout=30m
kubectl -n {GpuHealth.namespace} create job {pair} --from=cronjob/{pair}
{jobs_done(GpuHealth.namespace, GpuHealth.pair_seconds, [pair])}
kubectl -n {GpuHealth.namespace} logs job/{pair} | grep 'bus bandwidth'
kubectl uncordon {BEFORE} {NODE}
```"""
