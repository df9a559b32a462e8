"""PIN-003: every image comes through a registry Harbor mirrors. Argo CD's chart pulled Redis and
HAProxy from ecr-public.aws.com, which no proxy cache mirrors: every host fetched them from the
internet past Harbor's scanning, and a site without internet had no Argo CD Redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.check.rules.pins import image_registry

from .conftest import edit_documents, findings

REDIS = "one-cluster/apps/ai/argo-cd/argocd.statefulset.argo-cd-redis-ha-server.yaml"

pytestmark = pytest.mark.tree_variants("one-cluster")


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        ("otel/opentelemetry-collector-k8s:1", "docker.io"),  # Docker Hub, by name alone
        ("redis:1-alpine", "docker.io"),
        ("ecr-public.aws.com/docker/library/redis:1-alpine", "ecr-public.aws.com"),
        ("localhost/tool:1", "localhost"),
        ("registry.example:5000/tool:1", "registry.example:5000"),
    ],
)
def test_an_images_registry_is_read_as_containerd_reads_it(image, registry):
    assert image_registry(image) == registry


def _pin_findings(tree: Path) -> list[str]:
    return [line for line in findings(tree) if "PIN-003" in line]


def test_an_image_from_a_registry_no_proxy_cache_mirrors_is_refused(tree: Path):
    def from_ecr(doc):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            container["image"] = container["image"].replace(
                "docker.io/library/", "ecr-public.aws.com/docker/library/"
            )

    edit_documents(tree, REDIS, from_ecr)
    lines = _pin_findings(tree)
    assert lines and all(ln.startswith(REDIS) and "comes from ecr-public.aws.com" in ln for ln in lines), (
        lines
    )


def test_images_an_operator_runs_are_held_to_the_mirrors_too(tree: Path):
    """A ClusterPolicy names `<repository>/<image>` per part it runs (a part it does not run is left
    alone); an ObjectStore or a Prometheus names whole references."""
    policy = "one-cluster/apps/ai/gpu-operator/clusterpolicy.cluster-policy.yaml"
    store = "one-cluster/apps/ai/aistor/aistor.objectstore.aistor.yaml"

    def elsewhere(doc):
        doc["spec"]["dcgmExporter"]["repository"] = "registry.example/nvidia"
        doc["spec"]["vgpuManager"]["repository"] = "registry.example/nvidia"  # disabled: not run, not judged

    edit_documents(tree, policy, elsewhere)
    edit_documents(
        tree,
        store,
        lambda doc: doc["spec"].update(image=doc["spec"]["image"].replace("quay.io", "registry.example")),
    )
    lines = _pin_findings(tree)
    assert len(lines) == 2, lines
    assert any(ln.startswith(policy) and "$.spec.dcgmExporter.repository" in ln for ln in lines), lines
    assert any(ln.startswith(store) and "$.spec.image" in ln and "registry.example" in ln for ln in lines), (
        lines
    )
