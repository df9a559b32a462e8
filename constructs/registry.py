"""Harbor's proxy-cache projects.

Harbor has no API objects for registries and projects: a Job, run by Argo CD on every sync, creates
the configured ones through Harbor's REST API and leaves existing ones alone.
"""

from __future__ import annotations

from constructs import Construct
from constructs.objects import NOBODY_POD, RESTRICTED_CONTAINER, api_object
from sitegen.model import ImagePin, Placement, Registry

ADMIN_PASSWORD_KEY = "HARBOR_ADMIN_PASSWORD"  # the key of the admin Secret the chart and the Job read

PROXY_CACHE_SCRIPT = """\
set -eu
auth="admin:${HARBOR_ADMIN_PASSWORD}"
post() {  # path json: created, or already there
  code=$(curl -sS -o /dev/null -w '%{http_code}' -u "$auth" -H 'Content-Type: application/json' \\
    -X POST "$HARBOR_API/$1" -d "$2")
  case "$code" in 201|409) ;; *) echo "POST $1: HTTP $code" >&2; exit 1 ;; esac
}
while read -r project type url; do
  post registries "{\\"name\\":\\"$project\\",\\"type\\":\\"$type\\",\\"url\\":\\"$url\\",\\"insecure\\":false}"
  id=$(curl -fsS -u "$auth" "$HARBOR_API/registries?q=name=$project" | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
  post projects "{\\"project_name\\":\\"$project\\",\\"registry_id\\":$id,\\"metadata\\":{\\"public\\":\\"true\\"}}"
  echo "proxy cache $project -> $url"
done <<EOF
$PROXY_CACHES
EOF
"""


class ProxyCacheProjects(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        registry: Registry,
        namespace: str,
        api: str,
        image: ImagePin,
        placement: Placement,
        admin_secret: str,
    ) -> None:
        super().__init__(scope, id)
        caches = "\n".join(f"{name} {c.type} {c.url}" for name, c in sorted(registry.proxy_cache.items()))
        api_object(
            self,
            "Resource",
            "batch/v1",
            "Job",
            {
                "name": "harbor-proxy-caches",
                "namespace": namespace,
                "annotations": {
                    "argocd.argoproj.io/hook": "Sync",
                    "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
                },
            },
            spec={
                "backoffLimit": 30,  # Harbor may still be starting on the first sync
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "automountServiceAccountToken": False,  # it talks to Harbor, never to the API server
                        "nodeSelector": placement.node_selector,
                        "tolerations": list(placement.tolerations),
                        "securityContext": NOBODY_POD,
                        "containers": [
                            {
                                "name": "proxy-caches",
                                "image": image.ref,
                                "command": ["/bin/sh", "-c", PROXY_CACHE_SCRIPT],
                                "env": [
                                    {"name": "HARBOR_API", "value": api},
                                    {"name": "PROXY_CACHES", "value": caches},
                                    {
                                        "name": "HARBOR_ADMIN_PASSWORD",
                                        "valueFrom": {
                                            "secretKeyRef": {
                                                "name": admin_secret,
                                                "key": ADMIN_PASSWORD_KEY,
                                            }
                                        },
                                    },
                                ],
                                "resources": {
                                    "requests": {"cpu": "10m", "memory": "32Mi"},
                                    "limits": {"memory": "64Mi"},
                                },
                                "securityContext": {**RESTRICTED_CONTAINER, "readOnlyRootFilesystem": True},
                            }
                        ],
                    }
                },
            },
        )
