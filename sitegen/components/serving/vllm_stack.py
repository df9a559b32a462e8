"""`vllm-stack`: the vLLM production-stack router on the hub's system pool, in front of the model servers
(the `models` app), each engine replica listed by its stable DNS name.

The router runs in a namespace of its own, not the serving tenant's: a platform component on the system
pool, whose taint a tenant namespace's pods must never tolerate, and whose API keys the tenant's
accounts have no reason to read."""

from __future__ import annotations

from typing import Literal

from constructs.edge import ApiKeys, Backend, Route
from constructs.serving import ENGINE_PORT
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity, ObjectPatch, placement_patch
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.flows import Flow
from sitegen.components.observability.kube_prometheus_stack import KubePrometheusStack
from sitegen.components.serving import PROJECT
from sitegen.components.values import (
    ON,
    Affinity,
    NonRootPod,
    Pdb,
    Resources,
    RestrictedContainer,
    Toggle,
    Values,
    requests,
    required_affinity,
)
from sitegen.model import ClusterLayout, Serving

API_KEYS_SECRET = "llm-api-keys"
API_KEYS_VAULT_KEY = "serving/api-keys"  # one property per client: client id -> API key

ROUTER_PORT = 80  # the router Service's port (the chart's servicePort)


def engine_backends(serving: Serving, cluster: ClusterLayout) -> list[tuple[str, str]]:
    """(URL, served model name) of every engine replica: StatefulSet pods under a headless Service."""
    domain = cluster.spec.dns_domain
    return [
        (f"http://{m.name}-{i}.{m.name}.{serving.tenant}.svc.{domain}:{ENGINE_PORT}", m.name)
        for m in serving.models
        for i in range(m.replicas)
    ]


class EngineSpec(Values):
    enableEngine: bool


class RouterSpec(Values):
    repository: str
    tag: str
    imagePullPolicy: Literal["IfNotPresent", "Always"]
    replicaCount: int
    pdb: Pdb
    routingLogic: str
    # engines are StatefulSet pods with stable names, listed one by one so the router can
    # route per engine (prefix-aware routing needs to know which engine holds a prefix)
    serviceDiscovery: Literal["static", "k8s"]
    staticBackends: str
    staticModels: str
    resources: Resources
    # the chart has no nodeSelector or tolerations for the router: affinity here, tolerations by patch
    affinity: Affinity
    securityContext: NonRootPod
    containerSecurityContext: RestrictedContainer
    serviceMonitor: Toggle


class VllmStackValues(Values):
    # The model servers are rendered by the generator (GpuPodTemplate), not by the chart.
    servingEngineSpec: EngineSpec = EngineSpec(enableEngine=False)
    routerSpec: RouterSpec


class VllmStack(ChartComponent):
    name = "vllm-stack"
    chart = "vllm-stack"
    serves = ("production-stack.vllm.ai/v1alpha1",)
    project = PROJECT
    layer = Layer.SERVICES
    after = (KubePrometheusStack,)  # its ServiceMonitor
    images = {"vllm-router": "the vLLM router"}

    namespace = "vllm-router"
    security = NamespaceSecurity("restricted", "the router is a plain Python web service")

    talks_to_api = False  # static service discovery: the router never calls the API server

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.is_hub and scope.has_gpus

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [Flow(ctx.site.services.serving.tenant, (ENGINE_PORT,), "the engines it routes to")]

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        return [
            placement_patch(
                "Deployment",
                f"{self.release_name}-deployment-router",
                ctx.system_placement,
                why="the chart has no tolerations value for the router: the system pool is tainted",
            )
        ]

    def routes(self, ctx: ClusterContext) -> list[Route]:
        hostname = ctx.site.services.serving.hostname
        # completions stream for minutes
        return [
            Route(
                "llm",
                self.namespace,
                hostname,
                (Backend(f"{self.release_name}-router-service", ROUTER_PORT, timeout="0s"),),
                # the OpenAI-compatible API is for the site's clients, each with a key of its own
                api_keys=ApiKeys(API_KEYS_SECRET, API_KEYS_VAULT_KEY),
            )
        ]

    def values(self, ctx: ClusterContext) -> VllmStackValues:
        serving = ctx.site.services.serving
        image = ctx.image("vllm-router")
        backends = engine_backends(serving, ctx.cluster)
        return VllmStackValues(
            routerSpec=RouterSpec(
                repository=image.repository,
                tag=image.pinned_tag,
                imagePullPolicy="IfNotPresent",
                replicaCount=serving.router_replicas,
                pdb=Pdb(),
                routingLogic=serving.routing,
                serviceDiscovery="static",
                staticBackends=",".join(url for url, _ in backends),
                staticModels=",".join(model for _, model in backends),
                resources=requests("1", "2Gi", "4Gi"),
                affinity=required_affinity([ctx.cluster.system_pool]),
                securityContext=NonRootPod(),
                # the router's libraries write caches under its home directory
                containerSecurityContext=RestrictedContainer(readOnlyRootFilesystem=False),
                serviceMonitor=ON,
            )
        )
