"""A scheduled copy of something put into an S3 bucket: what only the control-plane hosts hold, or a
database's logical dump.

A CronJob on the given pool: a producer (an init container) writes one file into a scratch volume
(from the host, or from a database it connects to), then curl puts that file under
`<prefix>/<cluster>/` of the target's bucket with an S3 signature (no SDK, no listing: a write-only key
is enough). The target's lifecycle rule (RUNBOOK) expires old copies. The etcd snapshots, the PKI
archive and Harbor's database dump are producers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct
from constructs.objects import RESTRICTED_CONTAINER, cron_job
from sitegen.model import ImagePin, Placement

OUTPUT_DIR = "/backup"
CA_MOUNT = "/etc/s3-ca"
KEYS_MOUNT = "/etc/s3-keys"  # files, not environment: they stay out of the process list

UPLOAD_SCRIPT = """\
set -eu
key="$PREFIX/$CLUSTER/$(date -u +%Y%m%dT%H%M%SZ)-$NODE_NAME$SUFFIX"
curl -fsS --retry 3 --cacert "$CA_FILE" --aws-sigv4 "aws:amz:$S3_REGION:s3" \\
  --user "$(cat "$KEYS/AWS_ACCESS_KEY_ID"):$(cat "$KEYS/AWS_SECRET_ACCESS_KEY")" \\
  -T "$OUTPUT" "https://$S3_HOST/$BUCKET/$key"
echo "uploaded s3://$BUCKET/$key ($(wc -c < "$OUTPUT") bytes)"
"""

# Root for host files readable by root only (etcd's client key, the CAs' keys), every capability
# dropped, nothing written outside the scratch volume.
ROOT_CONTAINER = {
    **RESTRICTED_CONTAINER,
    "runAsNonRoot": False,
    "runAsUser": 0,
    "readOnlyRootFilesystem": True,
}


@dataclass(frozen=True)
class S3Target:
    """A bucket and how to reach it: the Secrets of its keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
    and of the CA of its certificate (ca.crt), both in the CronJob's namespace."""

    host: str  # host[:port]
    region: str
    bucket: str
    credentials: str
    ca_secret: str


@dataclass(frozen=True)
class Producer:
    """The init container that writes `file` into the scratch volume, and the volumes it mounts."""

    container: dict[str, Any]
    file: str  # below OUTPUT_DIR
    suffix: str  # of the object's key: what the file is
    volumes: tuple[dict[str, Any], ...] = ()
    host_network: bool = False
    runs_as: int | None = None  # the producer's user, when not root: the upload reads its file as it


class HostBackup(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        namespace: str,
        cluster: str,
        schedule: str,
        prefix: str,
        target: S3Target,
        producer: Producer,
        curl: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        pod: dict[str, Any] = {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "nodeSelector": placement.node_selector,
            "tolerations": list(placement.tolerations),
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [producer.container],
            "containers": [_upload(producer, target, prefix=prefix, cluster=cluster, curl=curl)],
            "volumes": [
                *producer.volumes,
                {"name": "output", "emptyDir": {"sizeLimit": "10Gi"}},  # etcd's quota is 2 GiB by default
                {"name": "s3-ca", "secret": {"secretName": target.ca_secret}},
                {"name": "s3-keys", "secret": {"secretName": target.credentials}},
            ],
        }
        if producer.host_network:
            pod["hostNetwork"] = True
            pod["dnsPolicy"] = "ClusterFirstWithHostNet"
        cron_job(
            self,
            "CronJob",
            {"name": name, "namespace": namespace},
            schedule=schedule,
            job={
                "backoffLimit": 2,
                "activeDeadlineSeconds": 1800,
                "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": pod},
            },
        )


def _upload(
    producer: Producer, target: S3Target, *, prefix: str, cluster: str, curl: ImagePin
) -> dict[str, Any]:
    """The container that puts the producer's file into the target's bucket (UPLOAD_SCRIPT)."""
    env = {
        "PREFIX": prefix,
        "CLUSTER": cluster,
        "SUFFIX": producer.suffix,
        "BUCKET": target.bucket,
        "S3_HOST": target.host,
        "S3_REGION": target.region,
        "CA_FILE": f"{CA_MOUNT}/ca.crt",
        "OUTPUT": f"{OUTPUT_DIR}/{producer.file}",
        "KEYS": KEYS_MOUNT,
    }
    return {
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
        # reads what the producer wrote, 0600: as root, or as the producer's own user
        "securityContext": ROOT_CONTAINER
        if producer.runs_as is None
        else {
            **RESTRICTED_CONTAINER,
            "runAsUser": producer.runs_as,
            "readOnlyRootFilesystem": True,
        },
        "volumeMounts": [
            {"name": "output", "mountPath": OUTPUT_DIR, "readOnly": True},
            {"name": "s3-ca", "mountPath": CA_MOUNT, "readOnly": True},
            {"name": "s3-keys", "mountPath": KEYS_MOUNT, "readOnly": True},
        ],
    }


def output_mount() -> dict[str, Any]:
    return {"name": "output", "mountPath": OUTPUT_DIR}
