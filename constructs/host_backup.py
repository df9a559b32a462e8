"""A scheduled copy of something put into an S3 bucket: what only the control-plane hosts hold, or a
database's logical dump.

A CronJob on the given pool: a producer (an init container) writes one file into a scratch volume
(from the host, or from a database it connects to), then curl puts that file under
`<prefix>/<cluster>/` of the target's bucket with an S3 signature (no SDK, no listing: a write-only key
is enough), in one PUT or, past the largest one PUT may carry, as a multipart upload of 1 GiB parts.
The target's lifecycle rule (RUNBOOK) expires old copies. The etcd snapshots, the PKI
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

PARTS_DIR = "/parts"  # scratch of a multipart upload: one part at a time, the part list
# The largest object one S3 PUT may carry (AWS's limit, which the S3 stores outside AWS keep; AIStor takes
# more): a larger file (an etcd snapshot near its 8 GiB quota, a large database dump) goes up in parts.
SINGLE_PUT_MAX_BYTES = 5 * 2**30
PART_MIB = 1024  # S3 takes parts of 5 MiB to 5 GiB, at most 10,000: 1 GiB keeps the scratch small

UPLOAD_SCRIPT = """\
set -eu
key="$PREFIX/$CLUSTER/$(date -u +%Y%m%dT%H%M%SZ)-$NODE_NAME$SUFFIX"
url="https://$S3_HOST/$BUCKET/$key"
s3() {
  curl -fsS --retry 3 --cacert "$CA_FILE" --aws-sigv4 "aws:amz:$S3_REGION:s3" \\
    --user "$(cat "$KEYS/AWS_ACCESS_KEY_ID"):$(cat "$KEYS/AWS_SECRET_ACCESS_KEY")" "$@"
}
size=$(($(wc -c < "$OUTPUT")))
if [ "$size" -le "$SINGLE_PUT_MAX_BYTES" ]; then
  s3 -T "$OUTPUT" "$url"
else
  # CreateMultipartUpload, UploadPart, CompleteMultipartUpload: all authorized as PutObject
  upload=$(s3 -X POST -H 'Content-Type: application/octet-stream' --data-binary '' "$url?uploads" \\
    | sed -n 's:.*<UploadId>\\(.*\\)</UploadId>.*:\\1:p')
  [ -n "$upload" ] || { echo "no UploadId from s3://$BUCKET/$key" >&2; exit 1; }
  id=$(printf '%s' "$upload" | sed 's/%/%25/g; s/+/%2B/g; s:/:%2F:g; s/=/%3D/g')
  # parts left behind by a failure are aborted, where the key may (else the store expires them)
  trap 's3 -X DELETE "$url?uploadId=$id" >/dev/null 2>&1 || true' EXIT
  part=$((PART_MIB * 1048576))
  count=$(((size + part - 1) / part))
  list="$PARTS/complete.xml"
  printf '<CompleteMultipartUpload>' > "$list"
  n=1
  while [ "$n" -le "$count" ]; do
    dd if="$OUTPUT" of="$PARTS/part" bs=1048576 skip=$(((n - 1) * PART_MIB)) count="$PART_MIB" 2>/dev/null
    etag=$(s3 -T "$PARTS/part" -D - -o /dev/null "$url?partNumber=$n&uploadId=$id" \\
      | tr -d '\\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p')
    [ -n "$etag" ] || { echo "part $n of $count: no ETag" >&2; exit 1; }
    printf '<Part><PartNumber>%s</PartNumber><ETag>%s</ETag></Part>' "$n" "$etag" >> "$list"
    n=$((n + 1))
  done
  printf '</CompleteMultipartUpload>' >> "$list"
  rm -f "$PARTS/part"
  s3 -X POST -H 'Content-Type: application/xml' --data-binary "@$list" "$url?uploadId=$id" > "$PARTS/done.xml"
  # a Complete may answer 200 OK and then an Error in its body
  if grep -q '<Error>' "$PARTS/done.xml"; then cat "$PARTS/done.xml" >&2; exit 1; fi
  trap - EXIT
fi
echo "uploaded s3://$BUCKET/$key ($size bytes)"
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
        service_account: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        pod: dict[str, Any] = {
            **({"serviceAccountName": service_account} if service_account else {}),
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "nodeSelector": placement.node_selector,
            "tolerations": list(placement.tolerations),
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [producer.container],
            "containers": [_upload(producer, target, prefix=prefix, cluster=cluster, curl=curl)],
            "volumes": [
                *producer.volumes,
                {"name": "output", "emptyDir": {"sizeLimit": "10Gi"}},  # etcd's quota is 8 GiB at most
                {"name": "parts", "emptyDir": {"sizeLimit": f"{PART_MIB // 1024 + 1}Gi"}},
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
        "SINGLE_PUT_MAX_BYTES": str(SINGLE_PUT_MAX_BYTES),
        "PART_MIB": str(PART_MIB),
        "PARTS": PARTS_DIR,
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
            {"name": "parts", "mountPath": PARTS_DIR},
            {"name": "s3-ca", "mountPath": CA_MOUNT, "readOnly": True},
            {"name": "s3-keys", "mountPath": KEYS_MOUNT, "readOnly": True},
        ],
    }


def output_mount() -> dict[str, Any]:
    return {"name": "output", "mountPath": OUTPUT_DIR}
