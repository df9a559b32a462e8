"""Workloads that load their key pair once, at start, rolled when cert-manager renews it.

cert-manager renews a Certificate at two thirds of its life (day 60 of the default 90) and writes the
new pair into its Secret; the kubelet updates a mounted Secret within a minute, but a server that read
the files at start (nginx, for one) serves the old pair until it restarts, and the clients that verify
it refuse it once it expires, a month later. Every hour a CronJob of the namespace compares each listed
Certificate's `status.notBefore` (when its current pair was issued) with an annotation it keeps on the
workload's pod template; when they differ it sets the annotation, and the workload's controller rolls
the pods by its own update strategy, each new pod loading the new pair. Git does not hold the
annotation, so Argo CD sees no difference (as with `kubectl rollout restart`). The first run sets it
once, rolling the pods a first time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from constructs import Construct
from constructs.objects import api_object, cron_job, script_pod
from sitegen.model import ImagePin, Placement

NAME = "certificate-rollover"
ANNOTATION = "sitegen.io/certificate-not-before"
LIST_KEY = "workloads.txt"
MOUNT = "/etc/certificate-rollover"
SCHEDULE = "23 * * * *"
RESOURCES = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}


@dataclass(frozen=True, order=True)
class Rolled:
    """A workload of the namespace that loads the key pair of `certificate` only at start."""

    certificate: str
    kind: str  # a key of RESOURCES
    name: str

    def line(self) -> str:
        return f"{self.certificate} {RESOURCES[self.kind]} {self.name}"


# reads WORKLOAD_LIST (certificate, resource, name a line), NAMESPACE, SA_DIR and API_SERVER; an answer
# other than 2xx (a Certificate or workload that does not exist, a right missing) fails the Job
ROLLOVER_SCRIPT = r"""set -eu
sa="$SA_DIR"
token=$(cat "$sa/token")
tmp="${TMPDIR:-/tmp}"
api() {  # method path [curl options]: the answer, without layout (the API server indents for curl)
  method=$1 path=$2; shift 2
  curl -fsS --cacert "$sa/ca.crt" -H "Authorization: Bearer $token" -X "$method" "$@" \
    -o "$tmp/answer.json" "$API_SERVER$path"
  tr -d '[:space:]' < "$tmp/answer.json" > "$tmp/compact.json"
}
field() {  # the string value of a key (a pattern) in the last answer; empty when absent
  grep -o "\"$1\":\"[^\"]*\"" "$tmp/compact.json" | head -n 1 | cut -d'"' -f4
}
rolled=0; current=0; unissued=0
while read -r certificate resource name; do
  api GET "/apis/cert-manager.io/v1/namespaces/$NAMESPACE/certificates/$certificate"
  issued=$(field notBefore)
  if [ -z "$issued" ]; then unissued=$((unissued + 1)); continue; fi
  workload="/apis/apps/v1/namespaces/$NAMESPACE/$resource/$name"
  api GET "$workload"
  if [ "$(field '@PATTERN@')" = "$issued" ]; then current=$((current + 1)); continue; fi
  api PATCH "$workload" -H 'Content-Type: application/merge-patch+json' \
    -d "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"@ANNOTATION@\":\"$issued\"}}}}}"
  echo "rolled $resource/$name: $certificate was issued at $issued"
  rolled=$((rolled + 1))
done < "$WORKLOAD_LIST"
echo "rolled $rolled workloads; $current load their certificate's current pair; $unissued not issued yet"
""".replace("@PATTERN@", ANNOTATION.replace(".", "[.]")).replace("@ANNOTATION@", ANNOTATION)


class CertificateRollover(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        rolled: Sequence[Rolled],
        image: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        meta = {"name": NAME, "namespace": namespace}
        lines = "".join(f"{r.line()}\n" for r in sorted(rolled))
        api_object(self, "List", "v1", "ConfigMap", meta, data={LIST_KEY: lines})
        self._access(namespace, rolled)
        pod = script_pod(
            "rollover", image.ref, ROLLOVER_SCRIPT,
            {"WORKLOAD_LIST": f"{MOUNT}/{LIST_KEY}", "NAMESPACE": namespace}, placement,
            volumes={"list": {"configMap": {"name": NAME}}}, mounts={"list": MOUNT}, account=NAME,
        )  # fmt: skip
        cron_job(
            self, "Schedule", meta, schedule=SCHEDULE, job={"backoffLimit": 2, "template": {"spec": pod}}
        )

    def _access(self, namespace: str, rolled: Sequence[Rolled]) -> None:
        """Its account reads the listed Certificates and reads and patches the listed workloads, by name."""
        rbac = "rbac.authorization.k8s.io"
        meta = {"name": NAME, "namespace": namespace}
        certificates = sorted({r.certificate for r in rolled})
        rules = [
            {"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "resourceNames": certificates,
             "verbs": ["get"]},
            *(
                {"apiGroups": ["apps"], "resources": [resource], "verbs": ["get", "patch"],
                 "resourceNames": sorted({r.name for r in rolled if RESOURCES[r.kind] == resource})}
                for resource in sorted({RESOURCES[r.kind] for r in rolled})
            ),
        ]  # fmt: skip
        api_object(self, "Account", "v1", "ServiceAccount", meta)
        api_object(self, "Role", f"{rbac}/v1", "Role", meta, rules=rules)
        api_object(
            self,
            "Binding",
            f"{rbac}/v1",
            "RoleBinding",
            meta,
            roleRef={"apiGroup": rbac, "kind": "Role", "name": NAME},
            subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        )
