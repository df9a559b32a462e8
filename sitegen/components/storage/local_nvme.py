"""`local-nvme`: the StorageClass of the local NVMe cache (TopoLVM), for GPU jobs and platform volumes."""

from __future__ import annotations

from constructs import Construct
from constructs.local_cache import LocalNvmeClass
from sitegen.components.base import Layer, RenderedComponent
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.storage import PROJECT
from sitegen.components.storage.topolvm import TopoLvm


class LocalNvme(RenderedComponent):
    name = "local-nvme"
    project = PROJECT
    layer = Layer.RESOURCES
    after = (TopoLvm,)

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return TopoLvm.applies(scope)

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        LocalNvmeClass(scope, "Class")
