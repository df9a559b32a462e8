"""How the hub's services reach AIStor's S3 API: in-cluster when AIStor shares the cluster, else the
AIStor cluster's load-balancer address under `storage.aistor.s3_hostname`. Either way over TLS with
the operator's certificate, whose CA the consumers trust from the vault (`aistor/ca`)."""

from __future__ import annotations

from dataclasses import dataclass

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site

OBJECT_STORE = "aistor"  # the ObjectStore's name and namespace
S3_SERVICE = "minio"  # the operator's S3 Service of an ObjectStore
REGION = "us-east-1"  # AIStor's default region; S3 clients sign requests with it


@dataclass(frozen=True)
class S3Endpoint:
    host: str
    region: str = REGION

    @property
    def url(self) -> str:
        return f"https://{self.host}"


def s3_endpoint(site: Site, layout: VariantLayout, consumer: ClusterLayout) -> S3Endpoint:
    if any(p.name == site.storage.aistor.pool for p in consumer.pools):
        return S3Endpoint(f"{S3_SERVICE}.{OBJECT_STORE}.svc.{consumer.spec.dns_domain}")
    return S3Endpoint(site.storage.aistor.s3_hostname)
