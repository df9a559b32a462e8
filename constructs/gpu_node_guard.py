"""The GPU node guard: cordons a GPU node as soon as Prometheus shows it broken (a fatal Xid, a GPU out
of spare rows, an NDR link down), so that no new job lands on it; the alerts say the same to a person.

node-problem-detector would watch the kernel log on each node instead; its chart is not in the offline
mirror, and an agent on a node that runs tenant code would need to patch Nodes, the escalation the
node-RBAC rule refuses. The guard runs on the system pool and reads what DCGM and node-exporter already
export. It never uncordons: a node comes back through its repair and burn-in (RUNBOOK), and someone
removes the label the guard leaves. It cordons at most `max_nodes` nodes: beyond that a fault is the
fabric's or Prometheus', not the nodes', and a person decides (an alert says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from constructs import Construct
from constructs.objects import NOBODY_POD, RESTRICTED_CONTAINER, account_with_cluster_role, api_object
from sitegen.model import ImagePin, Placement

NAME = "gpu-node-guard"
# On a node the guard cordoned, with the reason as its value; removed by hand after the repair.
CORDON_LABEL = "sitegen.io/auto-cordoned"
INTERVAL_SECONDS = 30
# Its pass wrote this file at most this long ago, or the pod is neither live nor ready.
STALE_MINUTES = 5

# POSIX sh and curl, nothing else (the curl image's busybox): one pass every INTERVAL seconds, `once`
# for a single pass. Prometheus' answer is compact JSON whose label sets are sorted: grep reads it.
GUARD_SCRIPT = r"""#!/bin/sh
set -u
SA=${SA:-/var/run/secrets/kubernetes.io/serviceaccount}
API=${API:-https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT}
SELECTOR=$(printf %s "$LABEL" | sed 's|/|%2F|g')
META='Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'

api() {  # method path [curl options]
  method=$1 path=$2; shift 2
  curl -fsS --cacert "$SA/ca.crt" -H "Authorization: Bearer $(cat "$SA/token")" -X "$method" "$@" "$API$path"
}

failing() {  # the nodes a condition's query names; fails when Prometheus does not answer
  answer=$(curl -fsS --get --data-urlencode "query=$1" "$PROMETHEUS/api/v1/query") || return 1
  printf '%s' "$answer" | grep -o '"node":"[^"]*"' | cut -d'"' -f4
}

ours() {  # only the plan's GPU hosts: a series naming anything else is not acted on
  case " $HOSTS " in *" $1 "*) return 0 ;; esac
  echo "ignored $1: not a GPU host of this cluster"
  return 1
}

cordon() {  # node reason
  # kube-apiserver pretty-prints JSON for curl: compare without the whitespace
  if api GET "/api/v1/nodes/$1" | tr -d ' \t\n' | grep -q '"unschedulable":true'; then
    return 0  # cordoned already: by a person, or by an earlier pass
  fi
  held=$(api GET "/api/v1/nodes?labelSelector=$SELECTOR" -H "$META" | grep -o '"uid":' | wc -l)
  if [ "$held" -ge "$MAX_NODES" ]; then
    echo "held back: $1 ($2): $held nodes already cordoned by the guard, at most $MAX_NODES"
    return 0
  fi
  api PATCH "/api/v1/nodes/$1" -H 'Content-Type: application/merge-patch+json' \
    -d "{\"metadata\":{\"labels\":{\"$LABEL\":\"$2\"}},\"spec\":{\"unschedulable\":true}}" >/dev/null
  echo "cordoned $1: $2"
}

guard_pass() {
  for condition in "$CONDITIONS"/*; do
    reason=$(basename "$condition")
    nodes=$(failing "$(cat "$condition")") || { echo "no answer from Prometheus for $reason"; return 1; }
    for node in $(printf '%s\n' $nodes | sort -u); do
      ours "$node" && { cordon "$node" "$reason" || return 1; }
    done
  done
  touch "$ALIVE"
}

if [ "${1:-}" = once ]; then
  guard_pass
  exit
fi
while :; do
  guard_pass || echo "pass failed; next in $INTERVAL s"
  sleep "$INTERVAL"
done
"""


class GpuNodeGuard(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        hosts: Sequence[str],
        conditions: Mapping[str, str],
        prometheus_url: str,
        max_nodes: int,
        image: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        labels = {"app.kubernetes.io/name": NAME}
        # get to see a cordon, list (metadata) to count its own, patch to cordon and label
        account_with_cluster_role(
            self,
            NAME,
            namespace,
            [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}],
        )
        api_object(
            self, "Script", "v1", "ConfigMap", {"name": f"{NAME}-script", "namespace": namespace},
            data={"guard.sh": GUARD_SCRIPT},
        )  # fmt: skip
        api_object(
            self, "Conditions", "v1", "ConfigMap", {"name": f"{NAME}-conditions", "namespace": namespace},
            data=dict(sorted(conditions.items())),
        )  # fmt: skip
        env = {
            "PROMETHEUS": prometheus_url,
            "HOSTS": " ".join(sorted(hosts)),
            "MAX_NODES": str(max_nodes),
            "LABEL": CORDON_LABEL,
            "INTERVAL": str(INTERVAL_SECONDS),
            "CONDITIONS": "/etc/guard/conditions",
            "ALIVE": "/tmp/alive",
        }
        pod = _pod(env, image=image, placement=placement)
        api_object(
            self,
            "Deployment",
            "apps/v1",
            "Deployment",
            {"name": NAME, "namespace": namespace, "labels": labels},
            spec={
                # one pass at a time: two guards could each cordon up to the limit
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        )


def _pod(env: Mapping[str, str], *, image: ImagePin, placement: Placement) -> dict[str, Any]:
    """The guard's pod: the script and conditions from their ConfigMaps, alive while its passes are."""
    probe = {
        "exec": {"command": ["/bin/sh", "-c", f"find /tmp/alive -mmin -{STALE_MINUTES} | grep -q ."]},
        "initialDelaySeconds": 60,
        "periodSeconds": 30,
    }
    return {
        "serviceAccountName": NAME,
        "nodeSelector": placement.node_selector,
        "tolerations": list(placement.tolerations),
        "securityContext": NOBODY_POD,
        "containers": [
            {
                "name": "guard",
                "image": image.ref,
                "command": ["/bin/sh", "/etc/guard/guard.sh"],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "livenessProbe": probe,
                "readinessProbe": probe,
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                "securityContext": {**RESTRICTED_CONTAINER, "readOnlyRootFilesystem": True},
                "volumeMounts": [
                    {"name": "script", "mountPath": "/etc/guard/guard.sh", "subPath": "guard.sh"},
                    {"name": "conditions", "mountPath": "/etc/guard/conditions"},
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
            }
        ],
        "volumes": [
            {"name": "script", "configMap": {"name": f"{NAME}-script"}},
            {"name": "conditions", "configMap": {"name": f"{NAME}-conditions"}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
        ],
    }
