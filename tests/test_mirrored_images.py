"""PIN-003: every image comes through a registry Harbor mirrors. Argo CD's chart pulled Redis and
HAProxy from ecr-public.aws.com, which no proxy cache mirrors: every host fetched them from the
internet past Harbor's scanning, and a site without internet had no Argo CD Redis."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sitegen.check.rules.pins import image_registry

from .conftest import validate

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


def test_an_image_from_a_registry_no_proxy_cache_mirrors_is_refused(tree: Path):
    path = tree / REDIS
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        for container in doc["spec"]["template"]["spec"]["containers"]:
            container["image"] = container["image"].replace(
                "docker.io/library/", "ecr-public.aws.com/docker/library/"
            )
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = validate(tree)
    assert result.exit_code == 1, result.stdout
    lines = [ln for ln in result.stdout.splitlines() if "PIN-003" in ln]
    assert lines and all(ln.startswith(REDIS) and "comes from ecr-public.aws.com" in ln for ln in lines), (
        lines
    )
