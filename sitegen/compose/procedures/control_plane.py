"""A cluster's control plane: its host files and the encryption key of Secrets at rest, kubeadm init
on the first node, and the other nodes' joins one at a time. The commands of the host files and of a
join are shared with the day-2 replacement of a member (replacement.py)."""

from __future__ import annotations

from pathlib import PurePosixPath

from constructs.api_server_policies import (
    ADMISSION_CONFIG,
    AUDIT_POLICY,
    AUTHENTICATION_CONFIG,
    ENCRYPTION_CONFIG,
    ENCRYPTION_KEY_NAME,
    ENCRYPTION_KEY_VAR,
    ENCRYPTION_PROVIDER,
)
from constructs.etcd_backup import HOST_RECIPIENT
from constructs.kubeadm import (
    ETCD_PATCH,
    KUBELET_PATCH,
    PATCHES_DIR,
    etcd_patch_file,
    kubelet_patch_file,
)
from sitegen.components.s3 import backup_target_folder
from sitegen.compose.apps import VariantApps
from sitegen.model import ClusterLayout, Host, PoolLayout, Site, paths
from sitegen.tree.runbook import Runbook

KUBE_VIP_MANIFEST = "/etc/kubernetes/manifests/kube-vip.yaml"
CA_CERT_HASH = """export KUBEADM_CA_CERT_HASH="sha256:$(openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt \\
  | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)\""""


def kubelet_patch(kdir: PurePosixPath, pool: PoolLayout) -> str:
    """The pool's kubelet reservations, where kubeadm picks them up at init or join."""
    return f"install -D -m 0644 {kdir}/{kubelet_patch_file(pool)} {PATCHES_DIR}/{KUBELET_PATCH}"


def encryption_key(site: Site, cluster: ClusterLayout) -> str:
    """The vault key (mount and path) of the cluster's encryption key of Secrets at rest."""
    return f"{site.secrets.vault.path}/kubernetes/{cluster.name}/encryption"


# The values a join needs, kept in the vault between the node that makes them and the host that joins
# (the token and the certificate key expire after two hours; the CA's hash stays)
JOIN_VALUES = {
    "KUBEADM_TOKEN": "token",
    "KUBEADM_CERTIFICATE_KEY": "certificate_key",
    "KUBEADM_CA_CERT_HASH": "ca_cert_hash",
}


def join_values_key(site: Site, cluster: ClusterLayout) -> str:
    return f"{site.secrets.vault.path}/kubernetes/{cluster.name}/join"


def store_join_values(site: Site, cluster: ClusterLayout, *names: str, verb: str = "patch") -> str:
    """Into the vault, from the node that made them (`put` the first time, `patch` after)."""
    fields = " ".join(f'{JOIN_VALUES[n]}="${n}"' for n in names)
    return f"vault kv {verb} {join_values_key(site, cluster)} {fields}"


def read_join_values(site: Site, cluster: ClusterLayout, *names: str) -> str:
    """On the joining host, from the vault."""
    key = join_values_key(site, cluster)
    return "export " + " ".join(f'{n}="$(vault kv get -field={JOIN_VALUES[n]} {key})"' for n in names)


def api_server_files(site: Site, cluster: ClusterLayout, kdir: PurePosixPath) -> str:
    """The files the API server's flags name, on a control-plane host: the encryption configuration
    with the cluster's key read from the vault (never made anew: a second key reads no Secret)."""
    return f"""install -D -m 0600 {kdir}/audit-policy.yaml {AUDIT_POLICY}
install -D -m 0600 {kdir}/admission-config.yaml {ADMISSION_CONFIG}
install -D -m 0600 {kdir}/authentication-config.yaml {AUTHENTICATION_CONFIG}
export {ENCRYPTION_KEY_VAR}="$(vault kv get -field=key {encryption_key(site, cluster)})"
envsubst < {kdir}/encryption-config.yaml | install -D -m 0600 /dev/stdin {ENCRYPTION_CONFIG}
unset {ENCRYPTION_KEY_VAR}"""


def pki_recipient(site: Site) -> str:
    """The PKI archive's recipient certificate on a rebuilt control-plane host (its timer encrypts to it)."""
    key = f"{site.secrets.vault.path}/{backup_target_folder(site.services.backups.second.name)}/pki-recipient"
    return f"vault kv get -field=tls.crt {key} | install -D -m 0644 /dev/stdin {HOST_RECIPIENT}"


# Where kubeadm's configuration is written for an init or a join: it holds the bootstrap token and the
# certificate key (which decrypts the control-plane certificates uploaded for two hours): root's alone,
# on tmpfs, removed once kubeadm took it (not /tmp under the default umask, readable by every user).
KUBEADM_CONFIG = "/run/kubeadm.yaml"


def kubeadm_config(source: PurePosixPath) -> str:
    return f"envsubst < {source} | install -m 0600 /dev/stdin {KUBEADM_CONFIG}"


def control_plane_join(site: Site, kdir: PurePosixPath, cluster: ClusterLayout, host: str) -> str:
    """A control-plane node's join, on the host, with the join values from the vault; it is done once
    its etcd member is Ready (joined as a learner, then promoted)."""
    return f"""{read_join_values(site, cluster, *JOIN_VALUES)}
{kubelet_patch(kdir, cluster.control_plane)}
install -D -m 0644 {kdir}/{etcd_patch_file(host)} {PATCHES_DIR}/{ETCD_PATCH}
install -D -m 0600 {kdir}/kube-vip.yaml {KUBE_VIP_MANIFEST}
{kubeadm_config(kdir / f"join-control-plane-{host}.yaml")}
kubeadm join --config {KUBEADM_CONFIG} && rm {KUBEADM_CONFIG}
kubectl -n kube-system wait --for=condition=Ready --timeout=10m pod/etcd-{host}"""


def control_plane(book: Runbook, apps: VariantApps, cluster: ClusterLayout) -> None:
    kdir = paths.in_repo(paths.kubeadm_dir(apps.layout.name, cluster.name))
    first, *others = cluster.control_plane.hosts
    _host_files(book, apps, cluster, kdir)
    _init(book, apps.site, cluster, kdir, first)
    for host in others:
        _join(book, apps.site, cluster, kdir, host)


def _host_files(book: Runbook, apps: VariantApps, cluster: ClusterLayout, kdir: PurePosixPath) -> None:
    api = cluster.spec.api
    cp_names = ", ".join(h.name for h in cluster.control_plane.hosts)
    book.step(
        f"Control-plane host files ({cp_names})",
        f"""
`{api.dns_name}` must resolve to the VIP {api.vip} before anything starts.

Secrets at rest ({ENCRYPTION_PROVIDER}): the key is made once, in the vault (`-cas=0` refuses to replace it,
which would leave every Secret written with it unreadable), and filled into the API server's
encryption config on every control-plane host. It is never written to git. The PKI archive of the
second target carries it too, encrypted to the offline `pki-backup.key` with kubeadm's CAs: an etcd
restored without the vault still has the key its Secrets need. Once, on the first host:

```sh
vault kv put -cas=0 {encryption_key(apps.site, cluster)} key="$(head -c 32 /dev/urandom | base64)"   # an error later is fine
```

Then on every control-plane host:

```sh
{api_server_files(apps.site, cluster, kdir)}
```
""",
    )


def _init(book: Runbook, site: Site, cluster: ClusterLayout, kdir: PurePosixPath, first: Host) -> None:
    book.step(
        f"First control-plane node: kubeadm init on {first.name}",
        f"""
```sh
{kubelet_patch(kdir, cluster.control_plane)}
install -D -m 0644 {kdir}/{etcd_patch_file(first.name)} {PATCHES_DIR}/{ETCD_PATCH}
install -D -m 0600 {kdir}/kube-vip-init.yaml {KUBE_VIP_MANIFEST}
export KUBEADM_TOKEN="$(kubeadm token generate)" KUBEADM_CERTIFICATE_KEY="$(kubeadm certs certificate-key)"
{kubeadm_config(kdir / f"init-{first.name}.yaml")}
kubeadm config validate --config {KUBEADM_CONFIG}
kubeadm init --upload-certs --config {KUBEADM_CONFIG} && rm {KUBEADM_CONFIG}
install -m 0600 {kdir}/kube-vip.yaml {KUBE_VIP_MANIFEST}   # back to admin.conf
{CA_CERT_HASH}
{store_join_values(site, cluster, *JOIN_VALUES, verb="put")}
```

Check that Secrets reach etcd encrypted (the stored value starts with the provider's prefix):

```sh
kubectl -n kube-system create secret generic encryption-check --from-literal=check=1
kubectl -n kube-system exec etcd-{first.name} -- etcdctl --endpoints=https://127.0.0.1:2379 \\
  --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \\
  --key=/etc/kubernetes/pki/etcd/healthcheck-client.key get /registry/secrets/kube-system/encryption-check \\
  | grep -q 'k8s:enc:{ENCRYPTION_PROVIDER}:v1:{ENCRYPTION_KEY_NAME}:' && echo "Secrets are encrypted at rest"
kubectl -n kube-system delete secret encryption-check
```

The joins below read the three `KUBEADM_*` values from the vault. kubectl from here on uses
`KUBECONFIG=/etc/kubernetes/admin.conf` of {first.name} (or a copy on an admin workstation). The uploaded certificates
expire after two hours, with the token; later joins make their own (Replacing a control-plane member).
""",
    )


def _join(book: Runbook, site: Site, cluster: ClusterLayout, kdir: PurePosixPath, host: Host) -> None:
    book.step(
        f"Control-plane join: {host.name} (one at a time)",
        f"""
```sh
{control_plane_join(site, kdir, cluster, host.name)}
```

The new etcd member must be Ready (it joined as a learner and was promoted) before the next node joins.
""",
    )
