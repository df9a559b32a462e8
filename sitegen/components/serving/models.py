"""`models`: one vLLM StatefulSet per configured model on the GPU pool, built from the GPU workload
template, queued through the serving tenant's Kueue queue."""

from __future__ import annotations

from constructs import Construct
from constructs.serving import HUGGING_FACE_HOSTS, MODEL_STARTUP_SECONDS, ServingModels
from sitegen.components.base import Component, Layer, RenderedComponent, State
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import WORLD, Flow
from sitegen.components.serving import PROJECT
from sitegen.components.serving.vllm_stack import VllmStack
from sitegen.components.storage.local_nvme import LocalNvme
from sitegen.components.tenants.tenant import Tenant


class Models(RenderedComponent):
    name = "models"
    project = PROJECT
    layer = Layer.TENANTS
    after = (
        Tenant,
        VllmStack,
        LocalNvme,
    )  # the serving tenant's queue; the router in front; the weights cache
    skip_dry_run = True
    images = {"vllm-openai": "the model servers"}

    talks_to_api = False

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        # the serving tenant's namespace, so its tenant may reach the hub too: the one exception
        return [Flow(WORLD, (443,), "model weights from the Hugging Face hub", names=HUGGING_FACE_HOSTS)]

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        serving = scope.site.services.serving
        return [cls(serving.tenant)] if scope.is_hub and scope.has_gpus else []

    def startup_seconds(self, ctx: ClusterContext) -> int:
        return MODEL_STARTUP_SECONDS

    def state(self, ctx: ClusterContext) -> list[State]:
        return [
            State(
                m.name,
                f"the weights of {m.source}",
                "cache",
                without_copy="downloaded again from the Hugging Face hub at start",
            )
            for m in ctx.site.services.serving.models
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        ServingModels(
            scope,
            "Models",
            serving=ctx.site.services.serving,
            cluster=ctx.cluster,
            fabric=ctx.site.fabric,
            image=ctx.image("vllm-openai"),
            store=ctx.store,
        )
