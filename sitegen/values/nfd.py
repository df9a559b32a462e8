"""Node Feature Discovery: the cluster's only instance (both NVIDIA charts' bundled copies are off)."""

from __future__ import annotations

from typing import Any

from sitegen.layout import ClusterLayout, VariantLayout
from sitegen.model import Site
from sitegen.values.base import Values, placed, requests


class NfdComponent(Values):
    nodeSelector: dict[str, str] | None = None
    tolerations: list[dict[str, str]]
    resources: dict[str, Any]
    config: dict[str, Any] | None = None


class NfdValues(Values):
    master: NfdComponent
    worker: NfdComponent
    gc: NfdComponent


def nfd_values(site: Site, layout: VariantLayout, cluster: ClusterLayout) -> NfdValues:
    system = placed(cluster.system_pool.placement)
    every_taint = sorted({t for p in cluster.pools for t in p.taints}, key=lambda t: (t.key, t.value or ""))
    return NfdValues(
        # nvidia.com labels (GPU Feature Discovery's) pass the master's namespace filter.
        master=NfdComponent(
            resources=requests("100m", "256Mi", "1Gi"), config={"extraLabelNs": ["nvidia.com"]}, **system
        ),
        # The worker must tolerate every pool taint before GPU or storage nodes can be labelled;
        # PCI classes 02 (network, incl. 0207 InfiniBand) and 03 (display, incl. 0302 3D) give the
        # pci-10de / pci-15b3 labels the GPU and Network Operators key on.
        worker=NfdComponent(
            tolerations=[t.toleration() for t in every_taint],
            resources=requests("50m", "128Mi", "512Mi"),
            config={
                "sources": {
                    "pci": {
                        "deviceClassWhitelist": ["02", "03", "0b40", "12"],
                        "deviceLabelFields": ["vendor"],
                    }
                }
            },
        ),
        gc=NfdComponent(resources=requests("10m", "64Mi", "256Mi"), **system),
    )
