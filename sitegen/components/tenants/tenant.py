"""`tenant-<name>`: a tenant's namespace (with its ResourceQuota, from `namespaces`), its Kueue
LocalQueue, its rail networks (the `fabric` app), its object storage and, where config asks, the
multi-node NCCL all-reduce benchmark.

Object storage: the tenant's buckets in AIStor (`<tenant>-<name>`, each with its hard quota, versions
or expiry; the RUNBOOK makes them with the tenant's key, whose policy reaches those buckets only) and,
in its namespace, what a workload needs to use them: the key (Secret `object-storage`, from the
vault), the endpoint and buckets (ConfigMap `object-storage`, as the AWS SDKs' and CLI's environment)
and the AIStor CA (Secret `aistor-ca`)."""

from __future__ import annotations

from constructs import Construct
from constructs.gpu_workload import NcclAllReduceJob
from constructs.kueue import CLUSTER_QUEUE, GPU_RESOURCE, TenantQueue, cohort_queue
from constructs.namespaces import Quota
from constructs.objects import api_object
from constructs.secrets import VaultSecret
from sitegen.components.base import Component, Layer, NamespaceSecurity, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.edge.gateway import Gateway
from sitegen.components.flows import Flow
from sitegen.components.gpu import gpu_job_tolerations
from sitegen.components.gpu.gpu_queues import GpuQueues
from sitegen.components.s3 import BucketRules, S3Access, S3Grant
from sitegen.components.storage.aistor import AIStor, ca_secret
from sitegen.components.tenants import PROJECT

OBJECT_STORAGE = "object-storage"  # the Secret of the tenant's key and the ConfigMap of its endpoint
CA_MOUNT = "/etc/aistor-ca"


class Tenant(RenderedComponent):
    name = "tenant"
    project = PROJECT
    layer = Layer.TENANTS
    skip_dry_run = True
    security = NamespaceSecurity("baseline", "tenant workloads, GPU pods included: none is exempt")
    queued = True
    images = {"nvidia-pytorch": "the NCCL all-reduce benchmark"}
    after = (GpuQueues,)

    talks_to_api = False

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        return [
            Flow(Gateway, (), "the site's public routes (the model API among them)"),
            Flow(AIStor, (), "S3"),
        ]

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.name = f"tenant-{tenant}"
        self.namespace = tenant

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        return [cls(name) for name in scope.site.tenants] if scope.has_gpus else []

    def _object_storage(self, scope: Construct, ctx: ClusterContext) -> None:
        (access,) = self.s3_access(ctx)
        VaultSecret(
            scope, "ObjectStorageKey", name=OBJECT_STORAGE, namespace=self.tenant, store=ctx.store,
            key=access.vault_key, properties=["access_key", "secret_key"],
            template={"AWS_ACCESS_KEY_ID": "{{ .access_key }}", "AWS_SECRET_ACCESS_KEY": "{{ .secret_key }}"},
        )  # fmt: skip
        ca_secret(scope, namespace=self.tenant, store=ctx.store)
        endpoint = AIStor.s3_endpoint(ctx.site, ctx.cluster)
        api_object(
            scope,
            "ObjectStorage",
            "v1",
            "ConfigMap",
            {"name": OBJECT_STORAGE, "namespace": self.tenant},
            data={
                "AWS_ENDPOINT_URL": endpoint.url,
                "AWS_REGION": endpoint.region,
                "AWS_CA_BUNDLE": f"{CA_MOUNT}/ca.crt",  # where a workload mounts Secret aistor-ca
                "BUCKETS": " ".join(access.buckets),
            },
        )

    def allowed_tolerations(self, ctx: ClusterContext) -> list[dict[str, str]]:
        return gpu_job_tolerations(ctx)

    def namespace_quota(self, ctx: ClusterContext) -> Quota:
        """Config's, or the capacity of the GPU pools for what config leaves out."""
        quota = ctx.site.tenants[self.tenant].quota
        pools = ctx.gpu_capacity
        return Quota(
            cpu=quota.cpu or pools.cpu_cores,
            memory_gb=quota.memory_gb or pools.memory_gb,
            gpus=quota.gpus or pools.gpus,
            gpu_resource=GPU_RESOURCE,
            storage_gb=quota.storage_gb,
            volumes=quota.volumes,
        )

    def priority_ceiling(self, ctx: ClusterContext) -> str | None:
        return ctx.site.tenants[self.tenant].priority

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        buckets = ctx.site.tenants[self.tenant].buckets(self.tenant)
        return [
            S3Access(
                f"tenant-{self.tenant}",
                tuple(S3Grant(name) for name in buckets),
                rules=tuple(
                    BucketRules(
                        name,
                        quota_tb=b.quota_tb,
                        versioning=b.versioning,
                        keep_days=b.keep_days if b.versioning else None,
                        expire_days=b.expire_days,
                    )
                    for name, b in buckets.items()
                ),
            )
        ]

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        tenant = ctx.site.tenants[self.tenant]
        TenantQueue(
            scope,
            "Queue",
            tenant=self.tenant,
            fair_share=tenant.fair_share,
            cluster_queue=CLUSTER_QUEUE if tenant.cohort is None else cohort_queue(tenant.cohort),
        )
        self._object_storage(scope, ctx)
        if ctx.site.tenants[self.tenant].nccl_benchmark:
            NcclAllReduceJob(
                scope,
                "NcclAllReduce",
                pool=ctx.gpu_pools[0],
                fabric=ctx.site.fabric,
                namespace=self.tenant,
                queue=self.tenant,
                image=ctx.image("nvidia-pytorch"),
            )
