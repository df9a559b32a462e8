"""A file the bootstrap runbook places on a host: kubeadm configs, static pods, API server policies.

These are not objects Argo CD syncs; each becomes one multi-document YAML file with a header that
says where it goes and what must be filled in at bootstrap.
"""

from __future__ import annotations

from typing import Any

from cdk8s import ApiObject

from constructs import Construct
from constructs.host_config import HostConfig
from constructs.objects import api_object, with_bodies

# Config-file API groups are decoded strictly by their readers and have no ObjectMeta.
_METADATA_FREE_GROUPS = (
    "kubeadm.k8s.io/",
    "kubelet.config.k8s.io/",
    "apiserver.config.k8s.io/",
    "audit.k8s.io/",
)


class HostFile(Construct):
    """One output file made of the documents added to it, in order."""

    def __init__(self, scope: Construct, id: str, *, file_name: str, header: str) -> None:
        super().__init__(scope, id)
        self.file_name = file_name
        self.header = header

    def documents(self) -> list[dict[str, Any]]:
        """Every ApiObject below this file (typed ones included), in the order they were created."""
        docs = []
        for obj in self.node.find_all():
            if not isinstance(obj, ApiObject):
                continue
            (doc,) = with_bodies([obj.to_json()], [obj])
            if doc["apiVersion"].startswith(_METADATA_FREE_GROUPS):
                doc.pop("metadata", None)
            docs.append(doc)
        return docs


def config_document(scope: Construct, config: HostConfig) -> ApiObject:
    """A typed host config document as `scope`'s primary child."""
    body = config.document()
    api_version, kind = body.pop("apiVersion"), body.pop("kind")
    return api_object(scope, "Resource", api_version, kind, None, **body)
