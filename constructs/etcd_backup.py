"""Producers of the control plane's backups (constructs/host_backup.py ships them).

- etcd: etcdctl (the image of the etcd kubeadm runs) saves a snapshot from the member on its node (host
  network, etcd's health-check client certificate, read-only from the host). One snapshot of a member
  holds the whole keyspace.
- PKI: the CAs kubeadm keeps in `/etc/kubernetes/pki` (cluster, etcd, front proxy, the service-account
  signing key) and the API server's encryption configuration (the key of the Secrets in etcd), archived
  and encrypted with CMS (AES-256-GCM) to a recipient certificate: the key that decrypts it never enters
  the cluster and is kept offline. Without the CAs a restored etcd has no CA its kubelets trust; without
  the encryption key none of its Secrets reads, and the vault, where the key lives otherwise, may be
  what is lost. The archive is made on the host, by a systemd timer the host baseline installs, with
  the host's own tar and openssl: the CA keys never enter a container, so no image (a third party's
  least of all) ever holds them. Only what a rebuilt control plane needs back goes in: the CAs, the
  service-account key pair and the encryption configuration, never the serving and client keys kubeadm
  makes anew from the CAs. The CronJob's producer only checks that the host's archive is fresh and
  hands the ciphertext to the upload.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from constructs.api_server_policies import ENCRYPTION_CONFIG
from constructs.host_backup import OUTPUT_DIR, ROOT_CONTAINER, Producer, output_mount
from constructs.kubeadm import KUBEADM_PKI
from constructs.objects import RESTRICTED_CONTAINER
from sitegen.model import ImagePin

NOBODY = 65534
ETCD_PKI = "/etc/kubernetes/pki/etcd"
ETCD_CLIENT_FILES = ("ca.crt", "healthcheck-client.crt", "healthcheck-client.key")
ENCRYPTION_DIR = str(PurePosixPath(ENCRYPTION_CONFIG).parent)
KUBEADM_DIR = PurePosixPath(KUBEADM_PKI).parent
# what the archive holds, relative to kubeadm's folder (one tar -C for both)
_PKI = PurePosixPath(KUBEADM_PKI).relative_to(KUBEADM_DIR)
_CAS = ("ca", "front-proxy-ca", "etcd/ca")
ARCHIVED_FILES = (
    *(str(_PKI / f"{ca}.{ext}") for ca in _CAS for ext in ("crt", "key")),
    str(_PKI / "sa.key"),
    str(_PKI / "sa.pub"),
    str(PurePosixPath(ENCRYPTION_DIR).relative_to(KUBEADM_DIR)),
)
ETCD_PREFIX = "etcd"
PKI_PREFIX = "pki"

# On the control-plane hosts (host_baseline.py installs them): the recipient certificate (public; the
# second-target step puts it there), the archiver, its timer, and the folder of the archive.
HOST_RECIPIENT = "/etc/kubernetes/pki-backup-recipient.crt"
HOST_ARCHIVE_DIR = "/var/lib/sitegen/pki-backup"
HOST_ARCHIVER = "/usr/local/sbin/sitegen-pki-archive"
ARCHIVE_UNIT = "sitegen-pki-archive"
ARCHIVE = "pki.tar.cms"
ARCHIVE_MAX_AGE_MINUTES = 120  # the timer runs hourly

PKI_SCRIPT = f"""\
#!/bin/bash
set -euo pipefail
umask 077
tmp="$(mktemp {HOST_ARCHIVE_DIR}/.{ARCHIVE}.XXXXXX)"
tar -C {KUBEADM_DIR} -cf - {" ".join(ARCHIVED_FILES)} \\
  | openssl cms -encrypt -binary -aes-256-gcm -outform DER -out "$tmp" {HOST_RECIPIENT}
chmod 0644 "$tmp"  # ciphertext: the upload reads it without root
mv "$tmp" {HOST_ARCHIVE_DIR}/{ARCHIVE}
"""

FRESH_ARCHIVE = f"""\
set -eu
archive={HOST_ARCHIVE_DIR}/{ARCHIVE}
if [ -z "$(find "$archive" -mmin -{ARCHIVE_MAX_AGE_MINUTES} 2>/dev/null)" ]; then
  echo "no PKI archive younger than {ARCHIVE_MAX_AGE_MINUTES} minutes on this node: systemctl status {ARCHIVE_UNIT}.timer" >&2
  exit 1
fi
cp "$archive" {OUTPUT_DIR}/{ARCHIVE}
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


def pki_archive(curl: ImagePin) -> Producer:
    """The host's archive, checked fresh and copied for the upload: ciphertext only, read as nobody."""
    return Producer(
        container={
            "name": "archive",
            "image": curl.ref,
            "command": ["/bin/sh", "-c", FRESH_ARCHIVE],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": {**RESTRICTED_CONTAINER, "runAsUser": NOBODY, "readOnlyRootFilesystem": True},
            "volumeMounts": [
                {"name": "pki-archive", "mountPath": HOST_ARCHIVE_DIR, "readOnly": True},
                output_mount(),
            ],
        },
        file=ARCHIVE,
        suffix=".tar.cms",
        volumes=({"name": "pki-archive", "hostPath": {"path": HOST_ARCHIVE_DIR, "type": "Directory"}},),
        runs_as=NOBODY,
    )


def _volume(file: str) -> str:
    return "etcd-" + file.replace(".", "-")
