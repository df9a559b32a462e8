"""Values of the registry (Harbor) and the AI serving router (vLLM production-stack) on the system pool."""

from __future__ import annotations

from typing import Any

from constructs.local_cache import CLASS_NAME as LOCAL_NVME
from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Serving, Site
from sitegen.objectstore import s3_endpoint
from sitegen.values.base import Values, placed, requests, required_affinity
from sitegen.values.observability import AISTOR_CA_SECRET

HARBOR_SERVICE = "harbor"
HARBOR_ADMIN_SECRET = "harbor-admin"
HARBOR_SECRET_KEY = "harbor-secret-key"
HARBOR_S3_SECRET = "harbor-s3"
ENGINE_PORT = 8000  # vLLM's API and metrics port in the model servers
ROUTER_PORT = 80  # the router Service's port (the chart's servicePort)
ROUTER_SERVICE = "vllm-router-service"  # `<release>-router-service`, release = app `vllm`


class HarborValues(Values):
    expose: dict[str, Any]
    externalURL: str
    existingSecretAdminPassword: str = HARBOR_ADMIN_SECRET
    existingSecretAdminPasswordKey: str = "HARBOR_ADMIN_PASSWORD"
    existingSecretSecretKey: str = HARBOR_SECRET_KEY
    persistence: dict[str, Any]
    # The site's trust anchor for S3: the registry verifies AIStor's certificate with it.
    caBundleSecretName: str | None = None
    metrics: dict[str, Any] = {"enabled": True, "serviceMonitor": {"enabled": True}}
    nginx: dict[str, Any]
    portal: dict[str, Any]
    core: dict[str, Any]
    jobservice: dict[str, Any]
    registry: dict[str, Any]
    trivy: dict[str, Any]
    exporter: dict[str, Any]
    database: dict[str, Any]
    redis: dict[str, Any]


def harbor_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> HarborValues:
    registry = site.services.registry
    system = placed(cluster.system_pool.placement)

    def claim(size: str, storage_class: str = LOCAL_NVME) -> dict[str, str]:
        return {"storageClass": storage_class, "size": size}

    claims: dict[str, Any] = {
        "database": claim("50G"),
        "redis": claim("5G"),
        "trivy": claim("20G"),
    }
    ca = None
    if registry.storage == "aistor":
        s3 = s3_endpoint(site, layout, cluster)
        image_storage: dict[str, Any] = {
            "type": "s3",
            # S3-compatible stores cannot serve the registry's redirects to signed URLs to every client
            "disableredirect": True,
            "s3": {
                "region": s3.region,
                "bucket": registry.bucket,
                "regionendpoint": s3.url,
                "existingSecret": HARBOR_S3_SECRET,
                "secure": True,
                "v4auth": True,
            },
        }
        ca = AISTOR_CA_SECRET
    else:
        image_storage = {"type": "filesystem"}
        claims["registry"] = {
            "storageClass": registry.powerscale_class,
            "accessMode": "ReadWriteMany",  # NFS: every registry replica mounts it
            "size": f"{registry.volume_gb}G",
        }
    # Stateless parts run twice; the internal database and Redis are single pods by design of the chart.
    return HarborValues(
        # TLS ends at the site Gateway; Harbor's own nginx is plain HTTP behind it
        expose={"type": "clusterIP", "tls": {"enabled": False}, "clusterIP": {"name": HARBOR_SERVICE}},
        externalURL=f"https://{registry.hostname}",
        persistence={"enabled": True, "persistentVolumeClaim": claims, "imageChartStorage": image_storage},
        caBundleSecretName=ca,
        nginx={"replicas": 2, **system},
        portal={"replicas": 2, **system},
        core={"replicas": 2, "resources": requests("500m", "1Gi", "2Gi"), **system},
        # job logs in the database: a file log would need one volume shared by both replicas
        jobservice={"replicas": 2, "jobLoggers": ["database"], **system},
        registry={"replicas": 2, **system},
        trivy={"replicas": 1, "resources": requests("200m", "512Mi", "2Gi"), **system},
        exporter={"replicas": 1, **system},
        database={"type": "internal", "internal": system},
        redis={"type": "internal", "internal": system},
    )


def engine_backends(serving: Serving, cluster: ClusterLayout) -> list[tuple[str, str]]:
    """(URL, served model name) of every engine replica: StatefulSet pods under a headless Service."""
    domain = cluster.spec.dns_domain
    return [
        (f"http://{m.name}-{i}.{m.name}.{serving.tenant}.svc.{domain}:{ENGINE_PORT}", m.name)
        for m in serving.models
        for i in range(m.replicas)
    ]


class VllmStackValues(Values):
    # The model servers are rendered by the generator (GpuPodTemplate), not by the chart.
    servingEngineSpec: dict[str, bool] = {"enableEngine": False}
    routerSpec: dict[str, Any]


def vllm_stack_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> VllmStackValues:
    serving = site.services.serving
    image = site.versions.images["vllm-router"]
    backends = engine_backends(serving, cluster)
    return VllmStackValues(
        routerSpec={
            "repository": image.repository,
            "tag": image.tag,
            "imagePullPolicy": "IfNotPresent",
            "replicaCount": serving.router_replicas,
            "pdb": {"enabled": True, "minAvailable": 1},
            "routingLogic": serving.routing,
            # engines are StatefulSet pods with stable names, listed one by one so the router can
            # route per engine (prefix-aware routing needs to know which engine holds a prefix)
            "serviceDiscovery": "static",
            "staticBackends": ",".join(url for url, _ in backends),
            "staticModels": ",".join(model for _, model in backends),
            "resources": requests("1", "2Gi", "4Gi"),
            # the chart has no nodeSelector or tolerations for the router
            "affinity": required_affinity([cluster.system_pool]),
            "serviceMonitor": {"enabled": True},
        }
    )
