"""The stateful volumes of a synthesized tree: every claim a workload or an operator's resource makes,
read from the objects themselves (charts' included), so a volume a chart bump adds is found too.

Read: StatefulSets' claim templates, PersistentVolumeClaims, CloudNativePG Clusters (data and WAL),
the Prometheus Operator's Prometheus and Alertmanager (`storage.volumeClaimTemplate`), AIStor's
ObjectStores (each server pool's drives). Not read: emptyDir and hostPath volumes (they hold nothing
that outlives the pod or is not the host's own), claims made at run time by tenants' workloads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


@dataclass(frozen=True)
class Volume:
    doc: Document
    app: str  # the Application's directory
    workload: str  # the name a component's State names
    claim: str
    storage_class: str
    size: str
    count: int


def _claim(spec: Mapping[str, Any]) -> tuple[str, str]:
    size = dig(spec, "resources", "requests", "storage", default="")
    return str(spec.get("storageClassName") or ""), str(size)


def volumes_of(doc: Document) -> Iterator[Volume]:
    app = doc.app
    if app is None:
        return
    body, kind = doc.body, doc.kind
    spec = body.get("spec") or {}
    group = doc.api_version.split("/")[0] if "/" in doc.api_version else ""
    if kind == "StatefulSet":
        for template in spec.get("volumeClaimTemplates") or []:
            cls, size = _claim(template.get("spec") or {})
            yield Volume(
                doc, app, doc.name, template["metadata"]["name"], cls, size, int(spec.get("replicas", 1))
            )
    elif kind == "PersistentVolumeClaim":
        yield Volume(doc, app, doc.name, doc.name, *_claim(spec), 1)
    elif (group, kind) == ("postgresql.cnpg.io", "Cluster"):
        for field in ("storage", "walStorage"):
            if spec.get(field):
                storage = spec[field]
                yield Volume(doc, app, doc.name, field, str(storage.get("storageClass", "")),
                             str(storage.get("size", "")), int(spec.get("instances", 1)))  # fmt: skip
    elif (group, kind) in (
        ("monitoring.coreos.com", "Prometheus"),
        ("monitoring.coreos.com", "Alertmanager"),
    ):
        template = dig(spec, "storage", "volumeClaimTemplate")
        if template:
            count = int(spec.get("replicas", 1)) * int(spec.get("shards", 1) or 1)
            yield Volume(doc, app, doc.name, "storage", *_claim(template.get("spec") or {}), count)
    elif (group, kind) == ("aistor.min.io", "ObjectStore"):
        for pool in spec.get("pools") or []:
            template = pool.get("volumeClaimTemplate") or {}
            count = int(pool.get("servers", 1)) * int(pool.get("volumesPerServer", 1))
            yield Volume(
                doc, app, doc.name, str(pool.get("name", "")), *_claim(template.get("spec") or {}), count
            )
