"""A scheduled snapshot of a cluster's stacked etcd, shipped to an AIStor bucket.

A CronJob on the control-plane pool: etcdctl (the image of the etcd kubeadm runs) saves a snapshot
from the member on its node (host network, etcd's health-check client certificate, read-only from the
host), then curl puts it under `etcd/<cluster>/` with an S3 signature. One snapshot of a member holds
the whole keyspace; the bucket's lifecycle rule (RUNBOOK) expires old ones.
"""

from __future__ import annotations

from constructs import Construct
from constructs.objects import RESTRICTED_CONTAINER, cron_job
from sitegen.model import ImagePin, Placement

NAME = "etcd-backup"
ETCD_PKI = "/etc/kubernetes/pki/etcd"
ETCD_CLIENT_FILES = ("ca.crt", "healthcheck-client.crt", "healthcheck-client.key")
SNAPSHOT_DIR = "/snapshot"
CA_MOUNT = "/etc/aistor-ca"
KEYS_MOUNT = "/etc/s3-keys"  # files, not environment: they stay out of the process list
PREFIX = "etcd"

UPLOAD_SCRIPT = """\
set -eu
key="$PREFIX/$CLUSTER/$(date -u +%Y%m%dT%H%M%SZ)-$NODE_NAME.db"
curl -fsS --retry 3 --cacert "$CA_FILE" --aws-sigv4 "aws:amz:$S3_REGION:s3" \\
  --user "$(cat "$KEYS/AWS_ACCESS_KEY_ID"):$(cat "$KEYS/AWS_SECRET_ACCESS_KEY")" \
  -T "$SNAPSHOT" "https://$S3_HOST/$BUCKET/$key"
echo "uploaded s3://$BUCKET/$key ($(wc -c < "$SNAPSHOT") bytes)"
"""

# Root for the private key etcd's certificates are readable by (mode 0600, root), every capability
# dropped, nothing written outside the snapshot volume.
ROOT_CONTAINER = {
    **RESTRICTED_CONTAINER,
    "runAsNonRoot": False,
    "runAsUser": 0,
    "readOnlyRootFilesystem": True,
}


class EtcdSnapshots(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        cluster: str,
        schedule: str,
        bucket: str,
        s3_host: str,
        s3_region: str,
        credentials: str,
        ca_secret: str,
        etcd: ImagePin,
        curl: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        snapshot = f"{SNAPSHOT_DIR}/etcd.db"
        env = {
            "PREFIX": PREFIX,
            "CLUSTER": cluster,
            "BUCKET": bucket,
            "S3_HOST": s3_host,
            "S3_REGION": s3_region,
            "CA_FILE": f"{CA_MOUNT}/ca.crt",
            "SNAPSHOT": snapshot,
            "KEYS": KEYS_MOUNT,
        }
        pod = {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "hostNetwork": True,  # etcd serves clients on the node's loopback
            "dnsPolicy": "ClusterFirstWithHostNet",
            "nodeSelector": placement.node_selector,
            "tolerations": list(placement.tolerations),
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [
                {
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
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "256Mi"},
                        "limits": {"memory": "1Gi"},
                    },
                    "securityContext": ROOT_CONTAINER,
                    # the client certificate and the CA's certificate only: never the CA's key
                    "volumeMounts": [
                        *(
                            {"name": _volume(f), "mountPath": f"{ETCD_PKI}/{f}", "readOnly": True}
                            for f in ETCD_CLIENT_FILES
                        ),
                        {"name": "snapshot", "mountPath": SNAPSHOT_DIR},
                    ],
                }
            ],
            "containers": [
                {
                    "name": "upload",
                    "image": curl.ref,
                    "command": ["/bin/sh", "-c", UPLOAD_SCRIPT],
                    "env": [
                        *({"name": k, "value": v} for k, v in env.items()),
                        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    ],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                    "securityContext": ROOT_CONTAINER,  # reads the snapshot etcdctl wrote as root, 0600
                    "volumeMounts": [
                        {"name": "snapshot", "mountPath": SNAPSHOT_DIR, "readOnly": True},
                        {"name": "aistor-ca", "mountPath": CA_MOUNT, "readOnly": True},
                        {"name": "s3-keys", "mountPath": KEYS_MOUNT, "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                *(
                    {"name": _volume(f), "hostPath": {"path": f"{ETCD_PKI}/{f}", "type": "File"}}
                    for f in ETCD_CLIENT_FILES
                ),
                {"name": "snapshot", "emptyDir": {"sizeLimit": "10Gi"}},  # etcd's quota is 2 GiB by default
                {"name": "aistor-ca", "secret": {"secretName": ca_secret}},
                {"name": "s3-keys", "secret": {"secretName": credentials}},
            ],
        }
        cron_job(
            self,
            "CronJob",
            {"name": NAME, "namespace": namespace},
            schedule=schedule,
            job={
                "backoffLimit": 2,
                "activeDeadlineSeconds": 1800,
                "template": {"metadata": {"labels": {"app.kubernetes.io/name": NAME}}, "spec": pod},
            },
        )


def _volume(file: str) -> str:
    return "etcd-" + file.replace(".", "-")
