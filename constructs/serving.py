"""Model servers of the AI serving tier: one vLLM StatefulSet per configured model on the GPU pool,
built from the GPU workload template, behind the vLLM router on the system pool."""

from __future__ import annotations

from typing import Any

from constructs import Construct
from constructs.gpu_workload import WORKLOAD_UID, GpuPodTemplate
from constructs.kueue import PRIORITY_LABEL, QUEUE_LABEL
from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from constructs.objects import api_object
from constructs.secrets import VaultSecret
from sitegen.model import ClusterLayout, Fabric, ImagePin, PoolLayout, ServedModel, Serving

ENGINE_PORT = 8000  # vLLM's API and metrics port in the model servers
HF_TOKEN_SECRET = "hf-token"

# What a model server reaches of the internet: the Hugging Face hub's API and the hosts its downloads
# redirect to (LFS files from cdn-lfs*.hf.co, Xet-stored files from *.xethub.hf.co).
HUGGING_FACE_HOSTS = ("huggingface.co", "*.huggingface.co", "*.hf.co", "*.xethub.hf.co")
PROBE_PERIOD_SECONDS = 10
# Downloading, loading and compiling a large model takes minutes: up to 30 before liveness counts (and
# what Kueue's waitForPodsReady must allow a model server, components/gpu/kueue.py).
MODEL_STARTUP_SECONDS = 30 * 60


def gpu_pool(cluster: ClusterLayout) -> PoolLayout:
    return next(p for p in cluster.pools if p.hardware.gpu is not None)


class ModelServer(Construct):
    """One model, tensor-parallel over every GPU of a node; its weights cached on the node's NVMe."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        model: ServedModel,
        namespace: str,
        pool: PoolLayout,
        fabric: Fabric,
        image: ImagePin,
        queue: str,
    ) -> None:
        super().__init__(scope, id)
        labels = {
            "app.kubernetes.io/name": "vllm",
            "app.kubernetes.io/instance": model.name,
            "model": model.name,
        }
        template = _engine_template(model, labels, namespace=namespace, pool=pool, fabric=fabric, image=image)
        api_object(
            self,
            "Service",
            "v1",
            "Service",
            {"name": model.name, "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",  # per-pod DNS names for the router's static backends
                "selector": labels,
                "ports": [{"name": "http", "port": ENGINE_PORT, "targetPort": "http"}],
            },
        )
        # The maintenance budget keeps one GPU node per engine replica: no drain evicts a replica,
        # whose weights cache is a volume on its node's NVMe (it could start nowhere else).
        api_object(
            self,
            "Budget",
            "policy/v1",
            "PodDisruptionBudget",
            {"name": model.name, "namespace": namespace, "labels": labels},
            spec={"maxUnavailable": 0, "selector": {"matchLabels": labels}},
        )
        api_object(
            self,
            "Resource",
            "apps/v1",
            "StatefulSet",
            {
                "name": model.name,
                "namespace": namespace,
                "labels": {**labels, QUEUE_LABEL: queue, PRIORITY_LABEL: "serving"},
            },
            spec={
                "serviceName": model.name,
                "replicas": model.replicas,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": labels},
                "template": template,
                "volumeClaimTemplates": [_weights_cache(model)],
            },
        )


def _engine_template(
    model: ServedModel,
    labels: dict[str, str],
    *,
    namespace: str,
    pool: PoolLayout,
    fabric: Fabric,
    image: ImagePin,
) -> dict[str, Any]:
    """The vLLM engine's pod: the GPU workload template, serving the model on every GPU of the node."""
    gpu = pool.hardware.gpu
    assert gpu is not None
    template = GpuPodTemplate(
        pool=pool,
        fabric=fabric,
        namespace=namespace,
        image=image,
        gpus=gpu.count,
        rails=(),
        labels=labels,
        env={"HF_HOME": "/models"},
        command=[
            "vllm",
            "serve",
            model.source,
            "--served-model-name",
            model.name,
            "--host",
            "0.0.0.0",
            "--port",
            str(ENGINE_PORT),
            "--tensor-parallel-size",
            str(gpu.count),
            "--max-model-len",
            str(model.max_model_len),
            "--enable-prefix-caching",
        ],
    ).to_dict()
    spec: dict[str, Any] = template["spec"]
    spec["securityContext"]["fsGroup"] = WORKLOAD_UID  # the weights volume is written as the pod's user
    container = spec["containers"][0]
    container["name"] = "vllm"
    container["env"].append(
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": "token"}}}
    )
    container["ports"] = [{"name": "http", "containerPort": ENGINE_PORT}]
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": PROBE_PERIOD_SECONDS}
    container["startupProbe"] = {**probe, "failureThreshold": MODEL_STARTUP_SECONDS // PROBE_PERIOD_SECONDS}
    container["readinessProbe"] = {**probe, "failureThreshold": 3}
    container["livenessProbe"] = {**probe, "failureThreshold": 6}
    container["volumeMounts"].append({"name": "models", "mountPath": "/models"})
    return template


def _weights_cache(model: ServedModel) -> dict[str, Any]:
    """The claim of each replica's weights cache, on its node's NVMe."""
    return {
        "metadata": {"name": "models"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": LOCAL_NVME,
            "resources": {"requests": {"storage": f"{model.cache_gb}G"}},
        },
    }


class ServingModels(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        serving: Serving,
        cluster: ClusterLayout,
        fabric: Fabric,
        image: ImagePin,
        store: str,
    ) -> None:
        super().__init__(scope, id)
        VaultSecret(
            self,
            "HfToken",
            name=HF_TOKEN_SECRET,
            namespace=serving.tenant,
            store=store,
            key="serving/hf-token",
            properties=["token"],
        )
        for model in serving.models:
            ModelServer(
                self,
                model.name,
                model=model,
                namespace=serving.tenant,
                pool=gpu_pool(cluster),
                fabric=fabric,
                image=image,
                queue=serving.tenant,
            )
