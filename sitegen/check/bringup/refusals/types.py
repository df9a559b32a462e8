"""The shape of a refusal check (refusals/__init__.py collects them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload

# (object, the cluster it is created in) -> the API server's reason to refuse it, or None
CreateCheck = Callable[[Mapping[str, Any], ClusterObjects], "str | None"]
# (workload, its cluster) -> why its pods are refused or never become Ready, or None
PodCheck = Callable[[Workload, ClusterObjects], "str | None"]
