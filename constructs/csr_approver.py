"""kubelet-csr-approver (postfinance): approves the kubelets' serving-certificate requests.

With `serverTLSBootstrap` every kubelet asks the cluster CA for its serving certificate through a
CertificateSigningRequest of signer `kubernetes.io/kubelet-serving`; kube-controller-manager signs
approved ones but never approves them. The approver does, for exactly the plan's nodes: the node
name must be one of the cluster's hosts and every IP SAN inside the Kubernetes network. Clients of
the kubelet (metrics-server, Prometheus, the API server's logs and exec) then verify it against
the cluster CA instead of skipping verification.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from constructs import Construct
from constructs.objects import RESTRICTED_CONTAINER, account_with_cluster_role, api_object
from sitegen.model import ImagePin, Placement

NAME = "kubelet-csr-approver"
SIGNER = "kubernetes.io/kubelet-serving"
HEALTH_PORT = 8081
METRICS_PORT = 8080
RBAC = "rbac.authorization.k8s.io/v1"


def provider_regex(hosts: Sequence[str]) -> str:
    """Exactly the plan's node names: a request for any other name is denied."""
    return "^(" + "|".join(re.escape(h) for h in sorted(hosts)) + ")$"


class KubeletCsrApprover(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        namespace: str,
        hosts: Sequence[str],
        node_cidr: str,
        image: ImagePin,
        placement: Placement,
    ) -> None:
        super().__init__(scope, id)
        labels = {"app.kubernetes.io/name": NAME}
        self._rbac(namespace)
        pod = _pod(labels, env=_env(hosts, node_cidr), image=image, placement=placement)
        api_object(
            self,
            "Deployment",
            "apps/v1",
            "Deployment",
            {"name": NAME, "namespace": namespace, "labels": labels},
            spec={
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        )

    def _rbac(self, namespace: str) -> None:
        account_with_cluster_role(
            self,
            NAME,
            namespace,
            [
                {
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["certificatesigningrequests"],
                    "verbs": ["get", "list", "watch"],
                },
                {
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["certificatesigningrequests/approval"],
                    "verbs": ["update"],
                },
                {
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["signers"],
                    "resourceNames": [SIGNER],
                    "verbs": ["approve"],
                },
            ],
        )
        # leader election and its events stay in the approver's own namespace
        api_object(
            self,
            "Role",
            RBAC,
            "Role",
            {"name": NAME, "namespace": namespace},
            rules=[
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["create", "get", "update"],
                },
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            ],
        )
        api_object(
            self,
            "RoleBinding",
            RBAC,
            "RoleBinding",
            {"name": NAME, "namespace": namespace},
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        )


def _env(hosts: Sequence[str], node_cidr: str) -> dict[str, str]:
    return {
        "PROVIDER_REGEX": provider_regex(hosts),
        "PROVIDER_IP_PREFIXES": node_cidr,
        # The cluster DNS does not resolve node names (they live in the hosts' own files): the
        # name is checked against the plan and the IPs against the node network instead.
        "BYPASS_DNS_RESOLUTION": "true",
        "ALLOWED_DNS_NAMES": "1",  # the node name; anything more is not a kubelet of ours
        # Judge only the kubelets' own requests: AIStor's operator asks this signer for its
        # store's certificate and approves that itself; judged, it would be denied, for good.
        "IGNORE_NON_SYSTEM_NODE": "true",
        "LEADER_ELECTION": "true",
        "METRICS_BIND_ADDRESS": f":{METRICS_PORT}",
        "HEALTH_PROBE_BIND_ADDRESS": f":{HEALTH_PORT}",
    }


def _pod(
    labels: dict[str, str], *, env: dict[str, str], image: ImagePin, placement: Placement
) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/healthz", "port": HEALTH_PORT}, "periodSeconds": 10}
    return {
        "serviceAccountName": NAME,
        "nodeSelector": placement.node_selector,
        "tolerations": list(placement.tolerations),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "containers": [
            {
                "name": "approver",
                "image": image.ref,
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "ports": [
                    {"name": "metrics", "containerPort": METRICS_PORT},
                    {"name": "health", "containerPort": HEALTH_PORT},
                ],
                "livenessProbe": probe,
                "readinessProbe": probe,
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"memory": "128Mi"},
                },
                "securityContext": {**RESTRICTED_CONTAINER, "readOnlyRootFilesystem": True},
            }
        ],
    }
