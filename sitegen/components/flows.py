"""The traffic a component's pods start, as components declare it (`Component.flows`): the network
policies and the flows report are made from these."""

from __future__ import annotations

from dataclasses import dataclass

WORLD = "world"  # outside the cluster (vault, git, registries, PowerScale, another cluster's address)
NODES = "nodes"  # the nodes themselves (host network: kubelet, node-exporter, etcd metrics)
EVERY_NAMESPACE = "*"


@dataclass(frozen=True)
class RemoteAccess:
    """How the pods of another cluster of the variant reach a component (`Component.remote_access`):
    the addresses it answers on there, and their TCP ports."""

    cidrs: tuple[str, ...]
    ports: tuple[int, ...]


@dataclass(frozen=True)
class Flow:
    """Traffic a component's pods start (egress): to the pods of another component (its namespace, on
    this cluster; on another cluster of the variant, the addresses and ports its `remote_access` gives,
    whatever `ports` says), to WORLD or NODES, or to EVERY_NAMESPACE. The destination's ingress follows
    from it. DNS, the own namespace and (for `talks_to_api` components) the API server need no
    declaration."""

    to: type | str  # a Component class (components/base.py imports this module), or one of the above
    ports: tuple[int, ...]  # TCP; () any
    why: str
    # WORLD only: the DNS names it reaches (Cilium's toFQDNs; `*` stands for the characters of one
    # label); empty: any address
    names: tuple[str, ...] = ()
