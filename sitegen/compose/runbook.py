"""The ordered bootstrap runbook of a variant: from bare hosts to Argo CD owning everything.

Every command names files of dist/ by their path in the repository; a test checks each one exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from constructs.aistor import OBJECT_STORE
from constructs.aistor import root_key as aistor_root_key
from constructs.kubeadm import (
    AUTHENTICATION_CONFIG,
    ENCRYPTION_CONFIG,
    ENCRYPTION_KEY_NAME,
    ENCRYPTION_KEY_VAR,
    ENCRYPTION_PROVIDER,
    ETCD_PATCH,
    KUBELET_PATCH,
    PATCHES_DIR,
    etcd_patch_file,
    kubelet_patch_file,
)
from constructs.secrets import (
    AUTH_DELEGATOR,
    READER_SERVICE_ACCOUNT,
    TOKEN_REVIEWERS,
    read_keys,
    vault_mount,
    vault_role,
)
from sitegen.components.base import S3Access, backup_target_folder
from sitegen.components.gpu.gpu_operator import GpuOperator
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.argo_cd import ArgoCd
from sitegen.components.platform.argocd_manager import ACCOUNT, ArgocdManager
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.platform_nodes.node_labels import NodeLabels
from sitegen.components.storage.aistor import AIStor
from sitegen.components.storage.aistor_volumemanager import AIStorVolumeManager
from sitegen.components.storage.csi_isilon import CsiIsilon
from sitegen.compose import paths
from sitegen.compose.apps import VariantApps
from sitegen.compose.day2 import day2
from sitegen.compose.fabric_hosts import DRIVER_ROOT
from sitegen.compose.second_target import second_consumers
from sitegen.compose.second_target import setup_step as second_target_setup
from sitegen.model import ClusterLayout, PoolLayout, Site, VariantLayout

FIELD_MANAGER = "argocd-controller"
JOIN_TOKEN_TTL = "2h"  # per pool: a pool's hosts join in parallel, well within it  # the field manager of Argo CD's server-side apply


def _prerequisites(site: Site, layout: VariantLayout, apps: VariantApps) -> list[str]:
    """What must exist before step 1: the names the site resolves, and what its outside systems need."""
    gateway = site.services.gateway.address
    names = [(c.spec.api.dns_name, f"{c.spec.api.vip} (cluster {c.name}'s API VIP)") for c in layout.clusters]
    names += [
        (host, f"{gateway} (the Gateway)")
        for host in sorted(
            {
                site.gitops.argocd.hostname,
                site.services.monitoring.grafana_hostname,
                site.services.monitoring.telemetry_hostname,
                site.services.registry.hostname,
            }
        )
    ]
    names.append(
        (
            site.storage.aistor.s3_hostname,
            "the `minio` Service's load-balancer address (set once AIStor runs)",
        )
    )
    out = ["## Before you start\n", "These names resolve in the site's DNS:\n"]
    out += [f"- `{name}` -> {target}" for name, target in names]
    extras = []
    if any(c.name == CsiIsilon.name for ctx in apps.contexts for c in ctx.components):
        extras.append(
            "- PowerScale: the SmartQuotas licence (csi-isilon enforces each volume's size as a quota); "
            "SnapshotIQ too once a VolumeSnapshotClass for csi-isilon is added (none is generated)."
        )
    if site.fabric.nics:
        extras.append(
            "- The NDR fabric's subnet manager (UFM or opensm) runs on every rail before the fabric "
            "preflight: an InfiniBand port without one stays down."
        )
    if extras:
        out += ["", "Outside the clusters:\n", *extras]
    return [*out, ""]


def directpv_nodes(names: list[str]) -> str:
    """Host names in DirectPV's ellipsis notation (`st{01...30}`) where they are one numbered run,
    else listed (the plugin's --nodes takes either)."""
    parts = [re.fullmatch(r"(.*?)(\d+)", n) for n in names]
    if names and all(parts):
        prefixes = {m.group(1) for m in parts}
        widths = {len(m.group(2)) for m in parts}
        numbers = [int(m.group(2)) for m in parts]
        if (
            len(prefixes) == 1
            and len(widths) == 1
            and numbers == list(range(numbers[0], numbers[0] + len(names)))
        ):
            (prefix,), (width,) = prefixes, widths
            if len(names) > 1:
                return f"{prefix}{{{numbers[0]:0{width}d}...{numbers[-1]:0{width}d}}}"
    return ",".join(names)


def _kubelet_patch(kdir: PurePosixPath, pool: PoolLayout) -> str:
    """The pool's kubelet reservations, where kubeadm picks them up at init or join."""
    return f"install -D -m 0644 {kdir}/{kubelet_patch_file(pool)} {PATCHES_DIR}/{KUBELET_PATCH}"


def _cluster_steps(apps: VariantApps, cluster: ClusterLayout, step: int) -> tuple[list[str], int]:
    variant = apps.layout.name
    site = apps.site
    ctx = apps.context(cluster)
    kdir = paths.in_repo(paths.kubeadm_dir(variant, cluster.name))
    first, *others = cluster.control_plane.hosts
    api = cluster.spec.api
    kv = site.secrets.vault.path
    encryption_key = f"kubernetes/{cluster.name}/encryption"
    out: list[str] = []

    def section(title: str, body: str) -> None:
        nonlocal step
        out.append(f"### {step}. {title}\n\n{body.strip()}\n")
        step += 1

    cp_names = ", ".join(h.name for h in cluster.control_plane.hosts)
    section(
        f"Control-plane host files ({cp_names})",
        f"""
`{api.dns_name}` must resolve to the VIP {api.vip} before anything starts. On every control-plane host:

```sh
install -D -m 0600 {kdir}/audit-policy.yaml /etc/kubernetes/audit/policy.yaml
install -D -m 0600 {kdir}/admission-config.yaml /etc/kubernetes/admission/admission.yaml
install -D -m 0600 {kdir}/authentication-config.yaml {AUTHENTICATION_CONFIG}
```

Secrets at rest ({ENCRYPTION_PROVIDER}): the key is made once, in the vault (`-cas=0` refuses to replace it,
which would leave every Secret written with it unreadable), and filled into the API server's
encryption config on every control-plane host. It is never written to git.

```sh
vault kv put -cas=0 {kv}/{encryption_key} key="$(head -c 32 /dev/urandom | base64)"   # once; an error later is fine
export {ENCRYPTION_KEY_VAR}="$(vault kv get -field=key {kv}/{encryption_key})"
envsubst < {kdir}/encryption-config.yaml | install -D -m 0600 /dev/stdin {ENCRYPTION_CONFIG}
unset {ENCRYPTION_KEY_VAR}
```
""",
    )
    section(
        f"First control-plane node: kubeadm init on {first.name}",
        f"""
```sh
{_kubelet_patch(kdir, cluster.control_plane)}
install -D -m 0644 {kdir}/{etcd_patch_file(first)} {PATCHES_DIR}/{ETCD_PATCH}
install -D -m 0600 {kdir}/kube-vip-init.yaml /etc/kubernetes/manifests/kube-vip.yaml
export KUBEADM_TOKEN="$(kubeadm token generate)" KUBEADM_CERTIFICATE_KEY="$(kubeadm certs certificate-key)"
envsubst < {kdir}/init-{first.name}.yaml > /tmp/kubeadm.yaml
kubeadm config validate --config /tmp/kubeadm.yaml
kubeadm init --upload-certs --config /tmp/kubeadm.yaml
install -m 0600 {kdir}/kube-vip.yaml /etc/kubernetes/manifests/kube-vip.yaml   # back to admin.conf
export KUBEADM_CA_CERT_HASH="sha256:$(openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt \\
  | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)"
```

Check that Secrets reach etcd encrypted (the stored value starts with the provider's prefix):

```sh
kubectl -n kube-system create secret generic encryption-check --from-literal=check=1
kubectl -n kube-system exec etcd-{first.name} -- etcdctl --endpoints=https://127.0.0.1:2379 \
  --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \
  --key=/etc/kubernetes/pki/etcd/healthcheck-client.key get /registry/secrets/kube-system/encryption-check \
  | grep -q 'k8s:enc:{ENCRYPTION_PROVIDER}:v1:{ENCRYPTION_KEY_NAME}:' && echo "Secrets are encrypted at rest"
kubectl -n kube-system delete secret encryption-check
```

Store the three `KUBEADM_*` values in the site vault for the joins below. kubectl from here on uses
`KUBECONFIG=/etc/kubernetes/admin.conf` of {first.name} (or a copy on an admin workstation). The uploaded certificates
expire after two hours; `kubeadm init phase upload-certs --upload-certs` renews them.
""",
    )
    for host in others:
        name = f"join-control-plane-{host.name}.yaml"
        section(
            f"Control-plane join: {host.name} (one at a time)",
            f"""
```sh
{_kubelet_patch(kdir, cluster.control_plane)}
install -D -m 0644 {kdir}/{etcd_patch_file(host)} {PATCHES_DIR}/{ETCD_PATCH}
install -D -m 0600 {kdir}/kube-vip.yaml /etc/kubernetes/manifests/kube-vip.yaml
envsubst < {kdir}/{name} > /tmp/kubeadm.yaml
kubeadm join --config /tmp/kubeadm.yaml
kubectl -n kube-system wait --for=condition=Ready --timeout=10m pod/etcd-{host.name}
```

The new etcd member must be Ready (it joined as a learner and was promoted) before the next node joins.
""",
        )
    for pool in cluster.worker_pools:
        if pool.name in site.fabric.nics:
            rails = ", ".join(f"{n.name} -> {n.netdev} on rail {n.rail}" for n in site.fabric.nics[pool.name])
            section(
                f"Fabric preparation: pool {pool.name}",
                f"""
Before these hosts join: name the IPoIB interfaces after the rail map ({rails}), load
`ib_ipoib` and `rdma_ucm` at boot, and lift containerd's locked-memory limit; then check the host
against the rail map from what the kernel shows (each RDMA device, its interface, the port ACTIVE,
which it is only once the subnet manager configured it). Join only hosts whose preflight passes: the
`rdma/rdma_rail_*` resources stay zero otherwise.{_topology_later(pool, cluster.name)}

```sh
bash {kdir}/fabric-prep-{pool.name}.sh
bash {kdir}/fabric-preflight-{pool.name}.sh
```
""",
            )
        section(
            f"Worker join: pool {pool.name} ({len(pool.hosts)} hosts)",
            f"""
A bootstrap token of the pool's own: the one of `kubeadm init` expires two hours after it, long
before the last of the site's joins. On {first.name}, then hand `KUBEADM_TOKEN` to the pool's hosts:

```sh
export KUBEADM_TOKEN="$(kubeadm token create --ttl {JOIN_TOKEN_TTL} --description 'join pool {pool.name}')"
```

On each host, with `NODE_NAME` and `NODE_IP` from the list in the file's header:

```sh
export NODE_NAME=<host> NODE_IP=<address>
{_kubelet_patch(kdir, pool)}
envsubst < {kdir}/join-{pool.name}.yaml > /tmp/kubeadm.yaml
kubeadm join --config /tmp/kubeadm.yaml
```

The pool's taints ({", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in pool.taints) or "none"}) are set
as the node registers.
""",
        )
    app_dir = paths.in_repo(paths.cluster_apps_dir(variant, cluster.name))
    cilium = ctx.get(Cilium)
    namespaces = (
        f"kubectl apply --server-side -f {app_dir}/{Namespaces.name}/\n" if ctx.has(Namespaces) else ""
    )
    label_lines = "\n".join(
        f"kubectl label node --overwrite {' '.join(h.name for h in pool.hosts)} \\\n  "
        + " ".join(f"{k}={v}" for k, v in sorted(pool.labels.items()))
        for pool in cluster.pools
    )
    section(
        "Node labels and namespaces",
        f"""
Nodes stay NotReady until the CNI runs; their pools' labels go on now, by hand this once, since the
system pool's services select them (a kubelet may not set `node-role.kubernetes.io/*` itself). Later the
`{NodeLabels.name}` CronJob labels every listed host that joins, and fails when a node lacks its pool's taints;
no Node object is ever applied from Git (that would make a joining kubelet skip its taints).

```sh
{label_lines}
{namespaces}kubectl get nodes -o custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].value
```
""",
    )
    cache_pools = [p for p in cluster.pools if p.name in site.storage.local_cache.pools]
    if cache_pools:
        vg = site.storage.local_cache.volume_group
        names = ", ".join(p.name for p in cache_pools)
        section(
            f"Local NVMe cache: volume group on the {names} hosts",
            f"""
TopoLVM carves cache volumes out of one LVM volume group per node. On every {names} host, over its
local NVMe drives (never the OS disk):

```sh
pvcreate /dev/nvme1n1 && vgcreate {vg} /dev/nvme1n1   # list every cache drive of the host
```
""",
        )
    section(
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
    return out, step


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


def _spoke_credential(apps: VariantApps, spoke: ClusterLayout, step: int, docs: list[dict[str, Any]]) -> str:
    site, variant = apps.site, apps.layout.name
    manager = apps.context(spoke).get(ArgocdManager)
    power = (
        "It may bind only the roles those apps render or bind, and one of them is `cluster-admin`: "
        "this token is as strong as cluster-admin on the cluster; it lives in the vault only."
        if "cluster-admin" in _bindable(docs)
        else "It may bind only the roles those apps render or bind: no cluster-admin."
    )
    kv = site.secrets.vault.path
    days = site.gitops.argocd.spoke_token_days
    folder = paths.in_repo(paths.app_dir(variant, spoke.name, manager.name))
    return f"""### {step}. Argo CD's credential for `{spoke.name}`

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
"""


def runbook(apps: VariantApps, by_cluster: Mapping[str, list[dict[str, Any]]]) -> str:
    """The runbook of a variant; `by_cluster` holds every object we render, per cluster (its vault keys
    and each cluster's vault policy are read there)."""
    documents = [doc for docs in by_cluster.values() for doc in docs]
    layout = apps.layout
    variant = layout.name
    site = apps.site
    hub = layout.hub
    argo = apps.context(hub).get(ArgoCd)
    ns = argo.namespace
    bootstrap = paths.in_repo(paths.bootstrap_dir(variant))
    lines = [
        f"# Bootstrap runbook: {variant}",
        "",
        f"{layout.description} Clusters: {', '.join(c.name for c in layout.clusters)}; Argo CD runs on "
        f"`{hub.name}` and manages every cluster. Run the steps in order; commands run from a checkout of "
        f"this repository at `{site.gitops.revision}`, kubectl against the cluster being built.",
        "",
    ]
    lines += _prerequisites(site, layout, apps)
    registry = site.services.registry
    trust = (
        " Nodes must trust the site CA (OS trust store) for Harbor's certificate."
        if site.services.certificates.issuer == "internal-ca"
        else ""
    )
    lines += [
        "## Every host\n",
        f"""### 1. containerd pulls through Harbor

Copy `{paths.in_repo(paths.mirrors_dir(variant))}/` to `/etc/containerd/certs.d/` on every host and set the CRI
registry `config_path` to that directory (containerd 2: `[plugins.'io.containerd.cri.v1.images'.registry]`).
Images of {", ".join(f"`{c.registry}`" for _, c in sorted(registry.proxy_cache.items()))} are then pulled
through Harbor's proxy caches at `{registry.hostname}`; each upstream stays the fallback, so pulls work
before Harbor runs.{trust}
""",
    ]
    step = 2
    ordered = [hub, *layout.spokes]
    for cluster in ordered:
        lines.append(f"## Cluster `{cluster.name}`\n")
        body, step = _cluster_steps(apps, cluster, step)
        lines += body
    consumers = s3_consumers(apps)
    second_folder = backup_target_folder(site.services.backups.second.name)
    later = {access.vault_key for access in [*consumers, *second_consumers(apps)]}
    later |= {f"{second_folder}/ca", f"{second_folder}/pki-recipient"}
    lines.append("## Outside the clusters\n")
    lines.append(second_target_setup(apps, step))
    step += 1
    lines.append("## The vault\n")
    spokes = layout.spokes
    registration = (
        f"""
A spoke's key `argocd/clusters/<cluster>` is written in the next step: the ExternalSecret
`cluster-<cluster>` in `{bootstrap}/` turns it into Argo CD's cluster Secret, and no Application of
a spoke syncs before it exists.
"""
        if spokes
        else ""
    )
    lines.append(
        f"""### {step}. Keys, auth mounts and policies

Every credential reaches the clusters through External Secrets: each namespace that holds
ExternalSecrets has its own SecretStore, which logs in through the cluster's Kubernetes auth mount
`{site.secrets.vault.auth_mount}-<cluster>` as the namespace's own role `{site.secrets.vault.role}-<namespace>`.
Before the root Application syncs, the vault must hold (key: properties):

{_vault_keys(documents, leave_out=later)}
{registration}
Each cluster gets its own Kubernetes auth mount, and each namespace a policy that reads exactly the
keys its ExternalSecrets name, bound to its `{READER_SERVICE_ACCOUNT}` service account: no cluster reads
another's credentials, no tenant a platform key, and only cert-manager's namespace the CA's private
key. A mount has no reviewer token of its own: Vault reviews each login with the token the login
presents (`disable_local_ca_jwt`, as the vault runs outside the clusters), which every
`{READER_SERVICE_ACCOUNT}` may have reviewed (binding `{TOKEN_REVIEWERS}` to `{AUTH_DELEGATOR}`, synced
with the stores). With `VAULT_ADDR` and an admin token, and each cluster's API CA in `<cluster>-ca.crt`:

```sh
{_vault_auth(site, layout, by_cluster)}
```
"""
    )
    step += 1
    for spoke in spokes:
        lines.append(_spoke_credential(apps, spoke, step, by_cluster[spoke.name]))
        step += 1
    lines.append(f"## Argo CD on `{hub.name}`\n")
    lines.append(
        f"""### {step}. Argo CD, rendered from its chart

```sh
kubectl apply --server-side --field-manager={FIELD_MANAGER} -n {ns} \\
  -f {paths.in_repo(paths.app_dir(variant, hub.name, argo.name))}/
kubectl -n {ns} wait --for=condition=Available --timeout=10m deployment -l app.kubernetes.io/part-of=argocd
```

If `{site.gitops.repo_url}` needs credentials, create its repository Secret from the site vault now
(an ExternalSecret once External Secrets runs); none is stored here. Argo CD has no local admin: sign-in
is SSO only (`{site.gitops.argocd.sso.issuer}`, groups {", ".join(f"`{g}` ({r})" for g, r in sorted(site.gitops.argocd.rbac.items()))}),
and works once the root has written the OIDC client secret from the vault; until then use kubectl.
Grafana signs in through the same provider (client `{site.services.monitoring.grafana_sso.client_id}`,
Admin and Viewer by the same groups, anyone else refused); its login form and basic auth are off, and
its local admin (`grafana/admin` in the vault) is break-glass only: `kubectl -n grafana exec deploy/grafana
-- grafana cli admin reset-admin-password ...` with `GF_AUTH_BASIC_ENABLED=true` set for the duration.
"""
    )
    step += 1
    lines.append(
        f"""### {step}. The root Application

```sh
kubectl apply --server-side -f {bootstrap}/{ns}.appproject.bootstrap.yaml
kubectl apply --server-side -f {bootstrap}/{ns}.application.root.yaml
```

The root Application syncs `{bootstrap}/`: the locked `default` project, one project per team, the
foundation's Applications and the `site` ApplicationSet, wave by wave, waiting until each is Healthy.
The ApplicationSet generates one Application per component and cluster (the `app.json` in each app's
folder) and syncs them in RollingSync steps, one per sync wave, each once every app of the earlier steps
is Healthy; Argo CD's credentials and the spoke registrations are its app `{hub.name}-argocd-access`.
From here on Argo CD owns everything, the CNI and itself included: its Applications `{hub.name}-cilium`
and `{hub.name}-argo-cd` adopt the objects applied above (same objects, same field manager). The next
steps run while it syncs, each once the Application it names is Healthy.
"""
    )
    step += 1
    for cluster in layout.clusters:
        for pool in cluster.worker_pools:
            if pool.name in site.fabric.nics and pool.hardware.gpu is not None:
                lines.append(_gpu_topology(step, variant, cluster, pool))
                step += 1
    aistor = next(
        (c for c in layout.clusters if any(p.name == site.storage.aistor.pool for p in c.pools)), None
    )
    if aistor is not None:
        volumes = f"{aistor.name}-{AIStorVolumeManager.name}"
        store = f"{aistor.name}-{AIStor.name}"
        volume_chart = site.versions.charts[AIStorVolumeManager.chart]
        lines.append(f"## AIStor on `{aistor.name}`\n")
        lines.append(
            f"""### {step}. AIStor drives

Once `{volumes}` is Healthy, hand the {site.storage.aistor.pool} pool's NVMe drives to it (an
imperative step of the volume manager); the ObjectStore's volume claims bind to them, and until then
`{store}` stays Progressing and the root waits. The `kubectl directpv` plugin is the binary MinIO
publishes for the DirectPV release that chart {volume_chart.chart} {volume_chart.version} deploys (AIStor's
DirectPV docs, CLI Reference: Install), on the admin host's PATH as `kubectl-directpv`; its version
must be the node servers' image tag:

```sh
kubectl directpv --version
kubectl -n directpv get daemonset node-server -o jsonpath='{{.spec.template.spec.containers[*].image}}'
kubectl directpv discover --nodes '{directpv_nodes([h.name for h in aistor.pool(site.storage.aistor.pool).hosts])}'
# review drives.yaml: every drive listed is erased
kubectl directpv init drives.yaml --dangerous
```
"""
        )
        step += 1
        if consumers:
            root_key = f"{site.secrets.vault.path}/{aistor_root_key(OBJECT_STORE)}"
            lines.append(
                f"""### {step}. AIStor buckets and keys

Once `{store}` is Healthy, give each S3 consumer its bucket and a key of its own (`mc` against the
ObjectStore, with the root credentials), and put each key in the vault; the consumers' ExternalSecrets
read them there. `{site.storage.aistor.s3_hostname}` resolves to the address the site gives the
`minio` Service (`kubectl -n {OBJECT_STORE} get service minio`), and its certificate is the operator's,
signed by the cluster CA:

```sh
mc alias set site https://{site.storage.aistor.s3_hostname} "$(vault kv get -field=user {root_key})" "$(vault kv get -field=password {root_key})"
{_buckets(consumers, site, variant)}
```
"""
            )
            step += 1
    lines.append(day2(apps))
    return "\n".join(lines)


def _topology_later(pool: PoolLayout, cluster: str) -> str:
    if pool.hardware.gpu is None:
        return ""
    return (
        f" The GPUs' place on the PCIe switches is checked once the GPU Operator's driver runs (step\n"
        f"`GPU topology: pool {pool.name}`, after `{cluster}-{GpuOperator.name}` is Healthy): no driver exists before."
    )


def _gpu_topology(step: int, variant: str, cluster: ClusterLayout, pool: PoolLayout) -> str:
    kdir = paths.in_repo(paths.kubeadm_dir(variant, cluster.name))
    return f"""### {step}. GPU topology: pool {pool.name}

Once `{cluster.name}-{GpuOperator.name}` is Healthy, on every host of pool {pool.name} (its driver runs there now),
check each GPU against its rail's NIC: on one PCIe switch (`nvidia-smi topo -m` from the driver's root,
`{DRIVER_ROOT}`). A host that fails: cordon it and fix it before it takes GPU jobs; its rails cross the CPU.

```sh
bash {kdir}/fabric-topology-{pool.name}.sh
```
"""


def s3_consumers(apps: VariantApps) -> list[S3Access]:
    found = [access for ctx, c in apps.in_registry_order() for access in c.s3_access(ctx)]
    return list(dict.fromkeys(found))  # one user per consumer, whichever clusters it runs on


def _grants(access: S3Access) -> str:
    return ", ".join(f"{g.bucket}/{g.prefix} ({g.access})" for g in access.grants)


def _buckets(consumers: list[S3Access], site: Site, variant: str) -> str:
    """Each bucket once (with its versioning, lock and lifecycle rules), then each consumer's key,
    limited by its policy (a file of the bootstrap folder)."""
    protection = site.storage.aistor.bucket_protection
    lines = []
    for bucket in sorted({b for access in consumers for b in access.buckets}):
        guard = protection.get(bucket)
        if guard is not None and guard.lock_days is not None:
            lines.append(
                f"mc mb --ignore-existing --with-lock site/{bucket}   # a lock is set at creation only"
            )
            lines.append(f"mc retention set --default GOVERNANCE {guard.lock_days}d site/{bucket}")
        else:
            lines.append(f"mc mb --ignore-existing site/{bucket}")
        if guard is not None and guard.versioning:
            lines.append(f"mc version enable site/{bucket}")
            keep = guard.lock_days or 1
            lines.append(
                f"mc ilm rule add --noncurrent-expire-days {keep} site/{bucket}   # old versions, once unlocked"
            )
        for access in consumers:
            if access.buckets[0] == bucket:
                lines += [
                    f"mc ilm rule add --prefix {prefix} --expire-days {days} site/{bucket}"
                    for prefix, days in access.expire
                ]
    for access in consumers:
        policy = paths.in_repo(paths.s3_policy_file(variant, access.user))
        lines.append(
            f"mc admin user svcacct add site <root-user> --name {access.user} --policy {policy}"
            f"   # only: {_grants(access)}"
        )
        lines.append(
            f"vault kv put {site.secrets.vault.path}/{access.vault_key} access_key=<from above> secret_key=<from above>"
        )
    return "\n".join(lines)


def _vault_auth(site: Site, layout: VariantLayout, by_cluster: Mapping[str, list[dict[str, Any]]]) -> str:
    """Per cluster its auth mount; per namespace with ExternalSecrets a policy reading exactly their
    keys and a role bound to the namespace's reader service account (no namespace reads another's)."""
    secrets = site.secrets
    vault = secrets.vault
    data = f"{vault.path}/data" if vault.version == "v2" else vault.path
    out = []
    for cluster in layout.clusters:
        mount = vault_mount(secrets, cluster.name)
        lines = [
            f"vault auth enable -path={mount} kubernetes",
            f"vault write auth/{mount}/config kubernetes_host=https://{cluster.spec.api.endpoint} "
            f"kubernetes_ca_cert=@{cluster.name}-ca.crt disable_local_ca_jwt=true",
        ]
        for namespace, keys in sorted(_keys_by_namespace(by_cluster[cluster.name]).items()):
            policy = f"{vault.role}-{cluster.name}-{namespace}"
            grants = "\n".join(f'path "{data}/{key}" {{ capabilities = ["read"] }}' for key in keys)
            lines += [
                f"vault policy write {policy} - <<'EOF'\n{grants}\nEOF",
                f"vault write auth/{mount}/role/{vault_role(secrets, namespace)} "
                f"bound_service_account_names={READER_SERVICE_ACCOUNT} "
                f"bound_service_account_namespaces={namespace} policies={policy} ttl=1h",
            ]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _keys_by_namespace(documents: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {}
    for doc in documents:
        if doc.get("kind") == "ExternalSecret":
            found.setdefault(doc["metadata"]["namespace"], set()).update(read_keys(doc))
    return {ns: sorted(keys) for ns, keys in found.items()}


def _vault_keys(documents: Iterable[dict[str, Any]], leave_out: set[str]) -> str:
    """The vault keys and properties every ExternalSecret of the variant reads (computed, never listed by
    hand), but for those a later step writes."""
    keys: dict[str, set[str]] = {}
    for doc in documents:
        if doc.get("kind") != "ExternalSecret":
            continue
        for item in doc["spec"].get("data", []):
            ref = item["remoteRef"]
            if ref["key"] in leave_out:
                continue
            keys.setdefault(ref["key"], set()).add(ref.get("property", ""))
        for item in doc["spec"].get("dataFrom", []):
            keys.setdefault(item["extract"]["key"], set()).add("(one property per client: id -> key)")
    return "\n".join(
        f"- `{k}`: {', '.join(sorted(p for p in props if p))}" for k, props in sorted(keys.items())
    )
