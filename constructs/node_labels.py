"""The labels of every pool's hosts, put on the nodes that joined, and their taints verified.

Nodes are never created from Git: a Node object synced before its host joins makes the kubelet skip
its `--register-with-taints`, and a GPU or AIStor node would come up without `dedicated=...`. A kubelet
may not set `node-role.kubernetes.io/*` on itself (NodeRestriction), so a CronJob does it: every few
minutes it merge-patches each listed host's labels (a host that has not joined answers 404 and is left
alone; PATCH never creates) and checks that the Node carries its pool's taints, which only kubeadm
registration puts there. A missing taint fails the Job, which the site's alerts report.

The list is one ConfigMap (a line per host), so a site ten times larger is ten times more lines, not
ten times more objects.
"""

from __future__ import annotations

import json

from constructs import Construct
from constructs.objects import account_with_cluster_role, api_object, script_pod
from sitegen.model import ImagePin, Placement, PoolLayout, Taint

NAME = "node-labeler"
LIST_KEY = "nodes.txt"
MOUNT = "/etc/node-labels"
SCHEDULE = "*/5 * * * *"

# reads NODE_LIST (host, label patch, taints a line), SA_DIR (the service account) and API_SERVER
LABEL_SCRIPT = """\
set -eu
sa="$SA_DIR"
api="$API_SERVER/api/v1/nodes"
token=$(cat "$sa/token")
labeled=0; absent=0; untainted=0
while read -r host patch taints; do
  code=$(curl -sS --cacert "$sa/ca.crt" -H "Authorization: Bearer $token" -o "${TMPDIR:-/tmp}/node.json" \\
    -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' "$api/$host" -d "$patch")
  case "$code" in
    200) labeled=$((labeled + 1)) ;;
    404) absent=$((absent + 1)); continue ;;
    *) echo "$host: PATCH answered HTTP $code" >&2; exit 1 ;;
  esac
  # the API server pretty-prints JSON for curl: compare without layout (taints hold no spaces)
  tr -d '[:space:]' < "${TMPDIR:-/tmp}/node.json" > "${TMPDIR:-/tmp}/node.min.json"
  for taint in $taints; do
    if ! grep -qF "$taint" "${TMPDIR:-/tmp}/node.min.json"; then
      echo "$host: lacks its pool's taint $taint (it joined without --register-with-taints)" >&2
      untainted=$((untainted + 1))
    fi
  done
done < "$NODE_LIST"
echo "labeled $labeled nodes; $absent listed hosts have not joined; $untainted taints missing"
[ "$untainted" -eq 0 ]
"""


def taint_fragment(taint: Taint) -> str:
    """The start of the taint as the API server writes it in a Node (Go field order, no spaces)."""
    body = {
        "key": taint.key,
        **({"value": taint.value} if taint.value is not None else {}),
        "effect": taint.effect,
    }
    return json.dumps(body, separators=(",", ":"))[:-1]


def host_lines(pools: list[PoolLayout]) -> str:
    """One line per host: name, the merge patch of its labels, the taints it must carry (separated by
    spaces, which neither compact JSON of label values nor taint fragments contain)."""
    lines = []
    for pool in pools:
        patch = json.dumps({"metadata": {"labels": pool.labels}}, sort_keys=True, separators=(",", ":"))
        taints = " ".join(taint_fragment(t) for t in pool.taints if t.effect != "PreferNoSchedule")
        lines += [f"{host.name} {patch} {taints}".rstrip() for host in pool.hosts]
    return "\n".join(sorted(lines)) + "\n"


class NodeLabeler(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        pools: list[PoolLayout],
        namespace: str,
        image: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        meta = {"name": NAME, "namespace": namespace}
        api_object(
            self,
            "List",
            "v1",
            "ConfigMap",
            {"name": "node-labels", "namespace": namespace},
            data={LIST_KEY: host_lines(pools)},
        )
        account_with_cluster_role(
            self, NAME, namespace, [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}]
        )
        pod = script_pod(
            "label", image.ref, LABEL_SCRIPT, {"NODE_LIST": f"{MOUNT}/{LIST_KEY}"}, placement,
            volumes={"list": {"configMap": {"name": "node-labels"}}}, mounts={"list": MOUNT}, account=NAME,
        )  # fmt: skip
        api_object(
            self,
            "Schedule",
            "batch/v1",
            "CronJob",
            meta,
            spec={
                "schedule": SCHEDULE,
                "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"spec": pod}}},
            },
        )
