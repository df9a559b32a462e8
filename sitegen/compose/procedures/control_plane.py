"""A cluster's control plane: its host files and the encryption key of Secrets at rest, kubeadm init
on the first node, and the other nodes' joins one at a time."""

from __future__ import annotations

from pathlib import PurePosixPath

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
from sitegen.compose.apps import VariantApps
from sitegen.compose.procedures.book import Runbook
from sitegen.model import ClusterLayout, Host, PoolLayout, paths


def kubelet_patch(kdir: PurePosixPath, pool: PoolLayout) -> str:
    """The pool's kubelet reservations, where kubeadm picks them up at init or join."""
    return f"install -D -m 0644 {kdir}/{kubelet_patch_file(pool)} {PATCHES_DIR}/{KUBELET_PATCH}"


def control_plane(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    kdir = paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))
    first, *others = cluster.control_plane.hosts
    _host_files(book, apps, cluster, kdir)
    _init(book, cluster, kdir, first)
    for host in others:
        _join(book, cluster, kdir, host)


def _host_files(book: Runbook, apps: VariantApps, cluster: ClusterLayout, kdir: PurePosixPath) -> None:
    api = cluster.spec.api
    kv = apps.site.secrets.vault.path
    encryption_key = f"kubernetes/{cluster.name}/encryption"
    cp_names = ", ".join(h.name for h in cluster.control_plane.hosts)
    book.step(
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


def _init(book: Runbook, cluster: ClusterLayout, kdir: PurePosixPath, first: Host) -> None:
    book.step(
        f"First control-plane node: kubeadm init on {first.name}",
        f"""
```sh
{kubelet_patch(kdir, cluster.control_plane)}
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


def _join(book: Runbook, cluster: ClusterLayout, kdir: PurePosixPath, host: Host) -> None:
    book.step(
        f"Control-plane join: {host.name} (one at a time)",
        f"""
```sh
{kubelet_patch(kdir, cluster.control_plane)}
install -D -m 0644 {kdir}/{etcd_patch_file(host)} {PATCHES_DIR}/{ETCD_PATCH}
install -D -m 0600 {kdir}/kube-vip.yaml /etc/kubernetes/manifests/kube-vip.yaml
envsubst < {kdir}/join-control-plane-{host.name}.yaml > /tmp/kubeadm.yaml
kubeadm join --config /tmp/kubeadm.yaml
kubectl -n kube-system wait --for=condition=Ready --timeout=10m pod/etcd-{host.name}
```

The new etcd member must be Ready (it joined as a learner and was promoted) before the next node joins.
""",
    )
