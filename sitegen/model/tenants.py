"""config/tenants.yaml: the site's users, each with a namespace and a GPU queue."""

from __future__ import annotations

from sitegen.model.fields import Strict


class Tenant(Strict):
    description: str
    nccl_benchmark: bool = False  # render the multi-node NCCL all-reduce benchmark job for this tenant
