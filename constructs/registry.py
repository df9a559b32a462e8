"""Harbor's proxy-cache projects, private, and the robot account the nodes pull them with.

Harbor has no API objects for registries, projects or robots: a Job, run by Argo CD on every sync,
creates the configured ones through Harbor's REST API (over HTTPS, through the site Gateway) and leaves
existing ones as configured: projects private, the pull robot's secret the vault's.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.objects import NOBODY_POD, RESTRICTED_CONTAINER, api_object
from sitegen.model import ImagePin, Placement, Registry

ADMIN_PASSWORD_KEY = "HARBOR_ADMIN_PASSWORD"  # the key of the admin Secret the chart and the Job read

# The system robot every node pulls with (containerd's hosts.toml sends it, RUNBOOK): pull, nothing else.
PULL_ROBOT = "node-pull"
ROBOT_PREFIX = "robot$"  # Harbor's default prefix of robot account names
PULL_SECRET_KEY = "secret"  # of the Secret (and vault property) with the robot's secret

PROXY_CACHE_SCRIPT = """\
set -eu
auth="admin:${HARBOR_ADMIN_PASSWORD}"
harbor() {  # curl, trusting the CA of the Gateway's certificate when it is the site's
  if [ -n "$HARBOR_CA" ]; then curl --cacert "$HARBOR_CA" "$@"; else curl "$@"; fi
}
api() {  # method path [json]: the HTTP code, the body in /tmp/body
  method=$1 path=$2
  if [ -n "${3:-}" ]; then set -- -d "$3"; else set --; fi
  harbor -sS -o /tmp/body -w '%{http_code}' -u "$auth" -H 'Content-Type: application/json' \\
    -H 'X-Is-Resource-Name: true' -X "$method" "$HARBOR_API/$path" "$@"
}
ensure() {  # method path json codes: fails on any other answer
  code=$(api "$1" "$2" "$3")
  case " $4 " in *" $code "*) ;; *) echo "$1 $2: HTTP $code" >&2; exit 1 ;; esac
}
first_id() { grep -o '"id": *[0-9]*' /tmp/body | head -n 1 | tr -dc '0-9'; }
while read -r project type url; do
  ensure POST registries "{\\"name\\":\\"$project\\",\\"type\\":\\"$type\\",\\"url\\":\\"$url\\",\\"insecure\\":false}" "201 409"
  ensure GET "registries?q=name=$project" "" 200
  id=$(first_id)
  ensure POST projects "{\\"project_name\\":\\"$project\\",\\"registry_id\\":$id,\\"metadata\\":{\\"public\\":\\"false\\"}}" "201 409"
  # one made public before stays so unless told: private, pulled only with the robot below
  ensure PUT "projects/$project" "{\\"metadata\\":{\\"public\\":\\"false\\"}}" 200
  echo "proxy cache $project -> $url (private)"
done <<EOF
$PROXY_CACHES
EOF
pull="{\\"resource\\":\\"repository\\",\\"action\\":\\"pull\\"}"
ensure POST robots "{\\"name\\":\\"$PULL_ROBOT\\",\\"level\\":\\"system\\",\\"duration\\":-1,\\"description\\":\\"containerd on every node\\",\\"permissions\\":[{\\"kind\\":\\"project\\",\\"namespace\\":\\"*\\",\\"access\\":[$pull]}]}" "201 409"
ensure GET "robots?q=name=$PULL_ROBOT" "" 200
robot=$(first_id)
# the vault's secret, so that the hosts' hosts.toml (filled from the vault) keeps working
ensure PATCH "robots/$robot" "{\\"secret\\":\\"$PULL_SECRET\\"}" 200
echo "robot $PULL_ROBOT: pull on every project"
"""


CA_DIR = "/etc/harbor-ca"


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


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
        pull_secret: str,
        ca: tuple[str, str] | None,
    ) -> None:
        """`api`: Harbor's API through the site Gateway; `ca`: the Secret and key of the CA that signed
        the Gateway's certificate (None: a public one, in the image's trust store)."""
        super().__init__(scope, id)
        mounts = [{"name": "tmp", "mountPath": "/tmp"}]  # the script's answers
        volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}]
        if ca is not None:
            mounts.append({"name": "ca", "mountPath": CA_DIR, "readOnly": True})
            volumes.append({"name": "ca", "secret": {"secretName": ca[0]}})
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
                        "volumes": volumes,
                        "containers": [
                            {
                                "name": "proxy-caches",
                                "image": image.ref,
                                "command": ["/bin/sh", "-c", PROXY_CACHE_SCRIPT],
                                "env": [
                                    {"name": "HARBOR_API", "value": api},
                                    {"name": "HARBOR_CA", "value": f"{CA_DIR}/{ca[1]}" if ca else ""},
                                    {"name": "PROXY_CACHES", "value": caches},
                                    {"name": "PULL_ROBOT", "value": PULL_ROBOT},
                                    _secret_env("HARBOR_ADMIN_PASSWORD", admin_secret, ADMIN_PASSWORD_KEY),
                                    _secret_env("PULL_SECRET", pull_secret, PULL_SECRET_KEY),
                                ],
                                "volumeMounts": mounts,
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
