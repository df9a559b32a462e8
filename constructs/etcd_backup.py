"""Producers of the control plane's backups (constructs/host_backup.py ships them).

- etcd: etcdctl (the image of the etcd kubeadm runs) saves a snapshot from the member on its node (host
  network, etcd's health-check client certificate, read-only from the host). One snapshot of a member
  holds the whole keyspace.
- PKI: the CAs kubeadm keeps in `/etc/kubernetes/pki` (cluster, etcd, front proxy, the service-account
  signing key) and the API server's encryption configuration (the key of the Secrets in etcd), archived
  and encrypted with CMS (AES-256-GCM) to a recipient certificate: the key that decrypts it never enters
  the cluster and is kept offline. Without the CAs a restored etcd has no CA its kubelets trust; without
  the encryption key none of its Secrets reads, and the vault, where the key lives otherwise, may be
  what is lost.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from constructs.host_backup import OUTPUT_DIR, ROOT_CONTAINER, Producer, output_mount
from constructs.kubeadm import ENCRYPTION_CONFIG, KUBEADM_PKI
from sitegen.model import ImagePin

ETCD_PKI = "/etc/kubernetes/pki/etcd"
ETCD_CLIENT_FILES = ("ca.crt", "healthcheck-client.crt", "healthcheck-client.key")
ENCRYPTION_DIR = str(PurePosixPath(ENCRYPTION_CONFIG).parent)
KUBEADM_DIR = PurePosixPath(KUBEADM_PKI).parent
# what the archive holds, relative to kubeadm's folder (one tar -C for both)
ARCHIVED = " ".join(str(PurePosixPath(p).relative_to(KUBEADM_DIR)) for p in (KUBEADM_PKI, ENCRYPTION_DIR))
RECIPIENT_MOUNT = "/etc/pki-recipient"
ETCD_PREFIX = "etcd"
PKI_PREFIX = "pki"

PKI_SCRIPT = f"""\
set -eu -o pipefail
tar -C {KUBEADM_DIR} -cf - {ARCHIVED} \\
  | openssl cms -encrypt -binary -aes-256-gcm -outform DER -out {OUTPUT_DIR}/pki.tar.cms \\
    {RECIPIENT_MOUNT}/tls.crt
"""


def etcd_snapshot(etcd: ImagePin) -> Producer:
    snapshot = f"{OUTPUT_DIR}/etcd.db"
    return Producer(
        container={
            "name": "snapshot",
            "image": etcd.ref,
            "command": [
                "etcdctl",
                "--endpoints=https://127.0.0.1:2379",
                f"--cacert={ETCD_PKI}/ca.crt",
                f"--cert={ETCD_PKI}/healthcheck-client.crt",
                f"--key={ETCD_PKI}/healthcheck-client.key",
                "snapshot",
                "save",
                snapshot,
            ],
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
            "securityContext": ROOT_CONTAINER,
            # the client certificate and the CA's certificate only: never the CA's key
            "volumeMounts": [
                *(
                    {"name": _volume(f), "mountPath": f"{ETCD_PKI}/{f}", "readOnly": True}
                    for f in ETCD_CLIENT_FILES
                ),
                output_mount(),
            ],
        },
        file="etcd.db",
        suffix=".db",
        volumes=tuple(
            {"name": _volume(f), "hostPath": {"path": f"{ETCD_PKI}/{f}", "type": "File"}}
            for f in ETCD_CLIENT_FILES
        ),
        host_network=True,  # etcd serves clients on the node's loopback
    )


def pki_archive(openssl: ImagePin, recipient_secret: str) -> Producer:
    return Producer(
        container={
            "name": "archive",
            "image": openssl.ref,
            "command": ["/bin/sh", "-c", PKI_SCRIPT],
            "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
            "securityContext": ROOT_CONTAINER,  # the CAs' keys are root's, 0600
            "volumeMounts": [
                {"name": "kubeadm-pki", "mountPath": KUBEADM_PKI, "readOnly": True},
                {"name": "encryption", "mountPath": ENCRYPTION_DIR, "readOnly": True},
                {"name": "recipient", "mountPath": RECIPIENT_MOUNT, "readOnly": True},
                output_mount(),
            ],
        },
        file="pki.tar.cms",
        suffix=".tar.cms",
        volumes=(
            {"name": "kubeadm-pki", "hostPath": {"path": KUBEADM_PKI, "type": "Directory"}},
            {"name": "encryption", "hostPath": {"path": ENCRYPTION_DIR, "type": "Directory"}},
            {"name": "recipient", "secret": {"secretName": recipient_secret}},
        ),
    )


def _volume(file: str) -> str:
    return "etcd-" + file.replace(".", "-")
