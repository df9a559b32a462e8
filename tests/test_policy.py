"""Every policy rule fires on a manifest that breaks it and names file and rule; rule ids are unique,
image pins are judged, the schema cache keys on what the checker reads. Compliant manifests pass:
test_policy_placement.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitegen.check import validate as validate_module
from sitegen.check.rules import RULES
from sitegen.check.rules.pins import image_is_pinned

from .conftest import add, invoke_sitegen, validate
from .policy_manifests import COMPUTE, CP_TAINT, GPU, GPU_TAINT, INFRA, container, namespace, workload

APP = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "x", "namespace": "argocd"},
    "spec": {
        "project": "platform",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "x"},
        "sources": [{"repoURL": "https://charts.example.com", "chart": "x", "targetRevision": "1.*"}],
    },
}

BREAKERS = {
    "PLC-001": [workload(selector={"node-role.kubernetes.io/infra": "yes"}), workload()],
    "PLC-002": [workload(selector=COMPUTE)],
    "PLC-003": [workload(selector=INFRA, tolerations=[GPU_TAINT])],
    "PLC-004": [workload(selector=INFRA, tolerations=[CP_TAINT])],
    "PLC-005": [workload("DaemonSet", selector=GPU)],
    "PSA-001": [namespace("demo", enforce=None)],
    "PSA-002": [namespace("demo", enforce="privileged")],
    "SEC-001": [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "demo"},
            "data": {"password": "aHVudGVyMg=="},
        }
    ],
    "PIN-001": [workload(selector=INFRA, containers=[container("nginx:latest")])],
    "PLC-008": [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "sneaky", "namespace": "ai-research"},  # a tenant: GPU taint only
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {"node-role.kubernetes.io/aistor": "true"},
                        "tolerations": [
                            {
                                "key": "dedicated",
                                "operator": "Equal",
                                "value": "aistor",
                                "effect": "NoSchedule",
                            }
                        ],
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    }
                }
            },
        }
    ],
    "SEC-003": [
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ClusterSecretStore",
            "metadata": {"name": "everyone"},
            "spec": {"provider": {"vault": {"server": "https://v", "path": "secret"}}},
        },
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": "s", "namespace": "demo"},
            "spec": {
                "secretStoreRef": {"kind": "SecretStore", "name": "site-vault"},  # demo has no store
                "data": [{"secretKey": "k", "remoteRef": {"key": "harbor/admin", "property": "password"}}],
            },
        },
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "SecretStore",
            "metadata": {"name": "borrowed", "namespace": "demo"},
            "spec": {
                "provider": {
                    "vault": {
                        "server": "https://v",
                        "path": "secret",
                        "auth": {
                            "kubernetes": {"mountPath": "kubernetes-ai", "role": "external-secrets-harbor"}
                        },
                    }
                }
            },
        },
    ],
    "SEC-004": [
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": "ca", "namespace": "ai-research"},  # a tenant
            "spec": {
                "secretStoreRef": {"kind": "SecretStore", "name": "site-vault"},
                "data": [
                    {"secretKey": "tls.key", "remoteRef": {"key": "pki/issuing-ca", "property": "tls.key"}}
                ],
            },
        },
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": "root", "namespace": "cert-manager"},  # even cert-manager: the root's key
            "spec": {
                "secretStoreRef": {"kind": "SecretStore", "name": "site-vault"},
                "data": [
                    {"secretKey": "tls.key", "remoteRef": {"key": "pki/site-ca", "property": "tls.key"}}
                ],
            },
        },
    ],
    "PIN-002": [APP],
    "SEC-002": [workload(selector=INFRA, containers=[{"name": "app", "image": "quay.io/example/a:1"}])],
    # no Namespace object: the cluster's admission default (baseline) applies, which refuses hostPID
    "PSA-003": [workload(selector=INFRA, hostPID=True)],
    # a controller (no host access) put back beside the node agents of monitoring-agents
    "PSA-004": [{**workload(selector=INFRA), "metadata": {"name": "svc", "namespace": "monitoring-agents"}}],
    # a certificate Job that selects the control plane but does not tolerate its taint: Pending for ever
    "PLC-006": [workload(selector={"node-role.kubernetes.io/control-plane": ""})],
}


ROOT_APP = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "x", "namespace": "argocd"},
    "spec": {
        "project": "platform-nodes",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "node-labeler"},
        "source": {
            "repoURL": "https://git.hpc.example.internal/platform/site-gitops.git",
            "targetRevision": "main",
            "path": "dist/one-cluster/apps/ai/node-labels",
        },
    },
}


def app_with(**spec: Any) -> dict[str, Any]:
    merged = {**ROOT_APP["spec"], **spec}
    return {**ROOT_APP, "spec": {k: v for k, v in merged.items() if v is not None}}


def nginx(conf: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "loki-gateway", "namespace": "loki"},
        "data": {"nginx.conf": conf},
    }


LOKI_PUSH = "location = /loki/api/v1/push { proxy_pass http://loki-write.loki.svc:3100; }"
BREAKERS["SEC-005"] = [
    nginx(f"http {{ server {{ listen 8080; {LOKI_PUSH} }} }}"),
    nginx(
        "http { server { listen 8080;\n  auth_basic_user_file /etc/nginx/secrets/.htpasswd;\n"
        "location ^~ /loki/api/v1/ { auth_basic off; proxy_pass http://loki-read.loki.svc:3100; } } }"
    ),
]

BREAKERS["SEC-006"] = [
    workload(name="metrics-server", containers=[container(args=["--kubelet-insecure-tls"])]),
    {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "kubelet", "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "kubelet"}},
            "endpoints": [
                {"port": "https-metrics", "scheme": "https", "tlsConfig": {"insecureSkipVerify": True}}
            ],
        },
    },
]

REDIS = "docker.io/goharbor/redis-photon:v2.15.1"
BREAKERS["SEC-007"] = [
    # the chart's internal Redis as Harbor renders it: no password at all
    workload("StatefulSet", name="harbor-redis", containers=[container(REDIS)]),
    # a password, but written into git
    workload(
        "StatefulSet",
        name="harbor-redis",
        containers=[
            container(
                REDIS,
                command=["redis-server", "--requirepass", "hunter2"],
                env=[{"name": "P", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "password"}}}],
            )
        ],
    ),
]

APP_BREAKERS = {
    "APP-005": {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "greedy", "namespace": "argocd"},
        "spec": {
            "sourceRepos": ["https://git.hpc.example.internal/platform/site-gitops.git"],
            "destinations": [],
            "clusterResourceWhitelist": [
                {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"}
            ],
        },
    },
    "APP-000": {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "x", "namespace": "argocd"},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": [{"a": "1"}]}}],
            "template": {"metadata": {"name": "{{.missing}}"}, "spec": {"project": "p"}},
        },
    },
    "APP-001": app_with(source={**ROOT_APP["spec"]["source"], "path": "dist/one-cluster/apps/ai/nothing"}),
    "APP-002": app_with(
        source=None,
        sources=[
            {
                "repoURL": "https://helm.cilium.io/",
                "chart": "cilium",
                "targetRevision": "0.0.1",
                "helm": {"valueFiles": ["$values/dist/one-cluster/values/ai/missing.yaml"]},
            },
            {"repoURL": ROOT_APP["spec"]["source"]["repoURL"], "targetRevision": "main", "ref": "values"},
        ],
    ),
    "APP-003": app_with(destination={"server": "https://elsewhere.example:6443", "namespace": "kube-system"}),
    "APP-004": app_with(project="tenants"),  # node-labels' objects and namespace: not a tenant's
}


def test_every_rule_has_a_breaker():
    # these break synthesized files: tests/test_hydrated_checks.py
    synthesized = {
        "VAL-001",
        "PLC-007",
        "FAB-001",
        "KUE-001",
        "KUE-002",  # test_hydrated_checks.py: Kueue's timeout shorter than a model server's start
        "NET-001",
        "NET-002",
        "APP-010",  # test_appsets.py: a set without selfHeal, a RollingSync, the set health taken away,
        "APP-011",  # an element no set generates; test_delivery_day2.py: a delete hook, a CRD prunable
        "APP-012",
        "APP-013",
        "APP-014",
        "APP-015",  # test_appsets.py: a set that takes its project from its elements
        "RBC-001",  # test_node_rbac.py: the network operator's group binding put back, and others
        "RBC-002",  # test_node_rbac.py: DirectPV's node server back on the controller's account
        "ADM-001",  # test_admission_policies.py: a role the cluster would refuse
        "BAK-001",  # test_second_backup.py: a backup only in AIStor
        "BAK-002",  # test_second_backup.py: a backup without its alert
        "BAK-003",  # test_second_backup.py: a claim the tenants' backup cannot snapshot
        "DATA-001",  # test_databases.py: a volume no component states
        "DATA-002",  # test_databases.py: state with no copy
        "PDB-001",  # test_operations.py: a model server a drain may evict
        "S3-001",  # test_s3_front_doors.py: S3 from another cluster through one address
        "RBC-003",  # test_power.py: the narrowed chart roles put back, a review taken away
        "VOL-001",  # test_power.py: the PowerScale CSI driver's inline mode put back
        "SEC-008",  # test_second_backup.py: a third-party image over kubeadm's CA keys
        "PIN-003",  # test_mirrored_images.py: an image from a registry no proxy cache mirrors
        "MON-001",  # test_scrape_targets.py: a monitor without its port, unread, or its target gone
        "TLS-001",  # test_certificate_rollover.py: nginx left out of the rollover, a stale rollover line
    }  # test_network_policy.py: NET-*
    assert {r.id for r in RULES} == {*BREAKERS, *APP_BREAKERS, "UNQ-001", *synthesized}


@pytest.mark.parametrize("rule_id", sorted(APP_BREAKERS))
@pytest.mark.tree_variants("one-cluster")
def test_application_rule_fires(tree, rule_id):
    rel = add(tree, f"one-cluster/bootstrap/{rule_id.lower()}.yaml", APP_BREAKERS[rule_id])
    result = validate(tree)
    assert result.exit_code == 1
    assert any(ln.startswith(rel) and f": {rule_id} " in ln for ln in result.stdout.splitlines()), (
        result.stdout
    )


@pytest.mark.parametrize("rule_id", sorted(BREAKERS))
@pytest.mark.tree_variants("one-cluster")
def test_rule_fires(tree, rule_id):
    for i, doc in enumerate(BREAKERS[rule_id]):
        rel = add(tree, f"one-cluster/apps/ai/broken/{rule_id.lower()}-{i}.yaml", doc)
        result = validate(tree)
        assert result.exit_code == 1
        lines = [ln for ln in result.stdout.splitlines() if ln.startswith(rel)]
        assert any(f": {rule_id} " in ln for ln in lines), result.stdout
        (tree / rel).unlink()


def test_unique_names_across_apps(tree):
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "demo"}}
    add(tree, "one-cluster/apps/ai/one/c.yaml", config_map)
    assert validate(tree).exit_code == 0
    add(tree, "two-cluster/apps/aistor/one/c.yaml", config_map)  # another cluster: fine
    assert validate(tree).exit_code == 0
    rel = add(tree, "one-cluster/apps/ai/two/c.yaml", config_map)
    result = validate(tree)
    assert result.exit_code == 1
    assert f"{rel} [doc 0] ConfigMap demo/c: UNQ-001 unique-names" in result.stdout


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        ("nginx:1.27.3", True),
        ("registry:5000/app:v2", True),
        ("registry:5000/app", False),
        ("app", False),
        ("app:latest", False),
        ("", False),
        ("app@sha256:" + "a" * 64, True),
        ("us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.19", False),
        ("registry.k8s.io/kueue/kueue:release-0.19", False),
        ("registry.k8s.io/kueue/kueue:v0.18.0", True),
        ("us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:v0.18.0", False),
        ("ghcr.io/org/app:main", False),
    ],
)
def test_image_pinning(image, pinned):
    assert image_is_pinned(image) is pinned


def test_rule_ids_are_unique():
    from sitegen.check.rules.base import rule

    with pytest.raises(ValueError, match="rule id SEC-001 is taken by no-secret-data"):
        rule("SEC-001", "again", "a second rule under a taken id")(lambda ctx: iter(()))


def test_the_schema_cache_keys_on_every_module_the_checker_reads():
    """validate keeps schema verdicts across runs by the digest of their sources: a project module the
    checker imports (the host-config models, the CRD stand-ins) left out of it would serve stale
    verdicts after that module changes (it did, for a new host-config kind)."""
    import ast
    import importlib
    from pathlib import Path

    from sitegen.check import schemas

    tree = ast.parse(Path(schemas.__file__).read_text())
    imported = {
        node.module for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("constructs", "sitegen")
    }  # fmt: skip
    assert imported
    sources = {m.__name__ for m in validate_module._SCHEMA_SOURCES}
    assert {importlib.import_module(m).__name__ for m in imported} <= sources


@pytest.mark.tree_variants("one-cluster")
def test_findings_as_json_for_scripts(tree):
    """`validate --format json`: the same findings, one object each, and nothing else on stdout."""
    rel = add(tree, "one-cluster/apps/ai/broken/sec-001-0.yaml", BREAKERS["SEC-001"][0])
    text = validate(tree)
    shown = invoke_sitegen("validate", "--dist", tree, "--format", "json")
    assert shown.exit_code == text.exit_code == 1
    report = json.loads(shown.stdout)
    mine = [f for f in report["findings"] if f["file"] == rel]
    assert mine and mine[0]["rule"] == "SEC-001" and mine[0]["document"] == 0
    assert len(report["findings"]) == len(text.stdout.splitlines()) - 1  # one line each, then the summary
    assert report["documents"]["one-cluster"] > 1000
