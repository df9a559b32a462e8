"""What an operator makes of its custom resources, declared by the component that ships the operator
(`Component.operands`): the workload that runs each resource's pods, and where the operator reads
their placement, resources, account and storage, in the resource or in an object it references (an
EnvoyProxy through its GatewayClass). The bring-up simulation (check/bringup/operators.py) makes that
workload once the resource is applied and schedules its pods like any other workload's."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Ref:
    """A step from one object to another: its kind, and JSON pointers to its name and namespace in the
    referring object (no namespace pointer: the referrer's namespace; cluster-scoped: none)."""

    kind: str
    name: str
    namespace: str = ""
    cluster_scoped: bool = False


@dataclass(frozen=True)
class Operand:
    """The workload an operator makes of each resource of `group`/`kind`, and its pods' template."""

    group: str
    kind: str
    workload: Literal["StatefulSet", "Deployment"]
    # its name: `{name}` and `{namespace}` of the resource; `{hashed}`: "<namespace>-<name>-<8 hex of
    # sha256("<namespace>/<name>")>" (Envoy Gateway's utils.GetHashedName, 48 characters before the hash)
    name: str
    why: str  # the operator, its version, and the source of the facts declared
    namespace: str = ""  # the workload's namespace ("": the resource's)
    labels: Mapping[str, str] = field(default_factory=dict)  # the pods' labels it sets (`{name}`...)
    # only resources whose referenced object has this value at this pointer (a GatewayClass's
    # controllerName): (steps to it, pointer, value)
    only_if: tuple[tuple[Ref, ...], str, str] | None = None
    # where it reads the fields below: the first chain of references that resolves; none declared: the
    # resource itself; declared but none resolves: its defaults alone
    config: tuple[tuple[Ref, ...], ...] = ()
    pod: Mapping[str, str] = field(default_factory=dict)  # pod spec field -> JSON pointer in the config
    pod_labels: str = ""  # JSON pointer to more pod labels (a podMetadata's)
    replicas: str = "/spec/replicas"
    default_replicas: int = 1
    resources: str = "/spec/resources"  # its main container's
    default_resources: Mapping[str, Any] = field(default_factory=dict)
    container: Mapping[str, Any] = field(default_factory=dict)  # what it sets on its main container
    claim: str = ""  # JSON pointer to the volumeClaimTemplate of its StatefulSet

    def workload_name(self, namespace: str, name: str) -> str:
        return self.name.format(name=name, namespace=namespace, hashed=hashed_name(f"{namespace}/{name}", 48))


def hashed_name(namespaced: str, length: int) -> str:
    """Envoy Gateway v1.9 internal/utils.GetHashedName."""
    digest = hashlib.sha256(namespaced.encode()).hexdigest()
    name = namespaced.replace("/", "-")
    if length > 0 and len(name) > length:
        name = name[:length].removesuffix("-")
    return f"{name}-{digest[:8]}"


def pointer(body: Any, path: str) -> Any:
    """The value at a JSON pointer (None where any step is missing)."""
    node = body
    for part in path.strip("/").split("/") if path.strip("/") else []:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node
