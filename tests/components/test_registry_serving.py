"""Registry and serving components: Harbor and its proxy caches, the vLLM router and the model servers."""

from __future__ import annotations

from sitegen.components.registry.harbor import Harbor
from sitegen.components.registry.harbor_config import HarborConfig
from sitegen.components.serving.models import Models
from sitegen.components.serving.vllm_stack import VllmStack

from .conftest import by_kind, context, render


def test_harbor_stores_images_in_its_aistor_bucket(one, small):
    values = render(one, "ai", Harbor)
    storage = values["persistence"]["imageChartStorage"]
    assert storage["type"] == "s3" and storage["s3"]["bucket"] == small.services.registry.bucket
    assert values["caBundleSecretName"] == "aistor-ca"


def test_proxy_cache_job_creates_every_configured_cache(one, small):
    (job,) = by_kind(render(one, "ai", HarborConfig), "Job")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert sorted(line.split()[0] for line in env["PROXY_CACHES"].splitlines()) == sorted(
        small.services.registry.proxy_cache
    )


def test_router_lists_every_engine_replica(one, small):
    router = render(one, "ai", VllmStack)["routerSpec"]
    replicas = sum(m.replicas for m in small.services.serving.models)
    assert len(router["staticBackends"].split(",")) == replicas


def test_model_servers_take_every_gpu_of_a_node(one, small):
    docs = render(one, "ai", Models)
    gpus = small.hardware_of("gpu").gpu.count
    for sts in by_kind(docs, "StatefulSet"):
        limits = sts["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == str(gpus)
        assert sts["metadata"]["namespace"] == small.services.serving.tenant


def test_serving_and_registry_only_on_the_hub(two):
    for kind in (Harbor, VllmStack, Models):
        assert context(two, "ai").has(kind) and not context(two, "aistor").has(kind)
