"""Multus' secondary networks: a pod's `k8s.v1.cni.cncf.io/networks` annotation names
NetworkAttachmentDefinitions, and where Multus is the cluster's CNI (deployed by the NVIDIA Network
Operator's NicClusterPolicy, `spec.secondaryNetwork.multus`) each must exist when the kubelet sets up the
pod's sandbox, or the CNI ADD fails and the pod never starts (multus-cni pkg/k8sclient/k8sclient.go:
parsePodNetworkAnnotation, getKubernetesDelegate; the event is `NoNetworkFound`).

The annotation is a JSON list of selection elements (`name`, `namespace`, `interface`) or a comma list of
`[namespace/]name[@interface]`; without a namespace the pod's own is meant. A NetworkAttachmentDefinition
exists when one is applied, or when the Network Operator (v26.4.1, pkg/state/state_*_network.go) makes
it of an IPoIBNetwork, MacvlanNetwork or HostDeviceNetwork: named as the network, in its
`spec.networkNamespace` (default `default`), once the operator runs.

Not modelled: Multus' namespaceIsolation (off by default) and its default-network annotation, the
delegate's own CNI failing (a missing plugin binary, IPAM exhaustion), NetworkAttachmentDefinitions made
by other controllers (none in dist/), a host-network pod (the kubelet calls no CNI for it: skipped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.tree.fields import dig

NETWORKS = "k8s.v1.cni.cncf.io/networks"
NAD = "network-attachment-definitions.k8s.cni.cncf.io"
# the Network Operator's network kinds, each rendered to a NetworkAttachmentDefinition
OPERATOR_NETWORKS = ("IPoIBNetwork", "MacvlanNetwork", "HostDeviceNetwork")
_ITEM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # parsePodNetworkObjectName's check


class NetworksError(ValueError):
    """The annotation does not parse (Multus refuses the pod's networks)."""


def _parse_item(item: str) -> tuple[str, str]:
    """`[namespace/]name[@interface]` -> (namespace, name); namespace "" when unset."""
    parts = item.split("/")
    if len(parts) > 2:
        raise NetworksError(f"Invalid network object (failed at '/') in {item!r}")
    namespace, rest = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    named = rest.split("@")
    if len(named) > 2:
        raise NetworksError(f"Invalid network object (failed at '@') in {item!r}")
    for part in [namespace, *named]:
        if part and not _ITEM.match(part):
            raise NetworksError(
                "failed to parse: one or more items did not match comma-delimited format (must consist of "
                f"lower case alphanumeric characters). Must start and end with an alphanumeric character), "
                f"mismatch @ '{part}'"
            )
    return namespace, named[0]


def requested_networks(annotation: str, pod_namespace: str) -> list[tuple[str, str]]:
    """The (namespace, name) of each network the annotation asks for, as Multus reads it."""
    text = annotation.strip()
    if text.startswith("["):
        try:
            elements = json.loads(text)
        except json.JSONDecodeError as e:
            raise NetworksError(
                f"failed to parse pod Network Attachment Selection Annotation JSON format: {e}"
            ) from e
        return [(str(e.get("namespace") or pod_namespace), str(e.get("name", ""))) for e in elements]
    found = []
    for item in (i.strip() for i in text.split(",")):
        if item:
            namespace, name = _parse_item(item)
            found.append((namespace or pod_namespace, name))
    return found


def _multus_runs(cluster: ClusterObjects) -> bool:
    """Multus is in the CNI chain: the NicClusterPolicy deploys it."""
    return any(
        dig(a.body, "spec", "secondaryNetwork", "multus") for _, a in cluster.of_kind("NicClusterPolicy")
    )


def _made_by_operator(cluster: ClusterObjects, namespace: str, name: str) -> Mapping[str, Any] | None:
    """The Network Operator's network that renders this NetworkAttachmentDefinition, if one is applied."""
    for kind in OPERATOR_NETWORKS:
        found = cluster.find(kind, "", name)
        if found is not None and (dig(found.body, "spec", "networkNamespace") or "default") == namespace:
            return found.body
    return None


def _missing(cluster: ClusterObjects, namespace: str, name: str) -> str | None:
    if cluster.find("NetworkAttachmentDefinition", namespace, name) is not None:
        return None
    why = f'cannot find a network-attachment-definition ({name}) in namespace ({namespace}): {NAD} "{name}" not found'
    network = _made_by_operator(cluster, namespace, name)
    if network is None:
        return why
    if cluster.controller_running("mellanox.com", str(network["kind"])):
        return None
    return f"{why} (the Network Operator that makes it of {network['kind']} {name} is not running)"


def missing_network(w: Workload, cluster: ClusterObjects) -> str | None:
    """Multus fails the sandbox of a pod whose networks annotation names a NetworkAttachmentDefinition
    that is not there (or does not parse)."""
    annotation = dig(w.template.metadata, "annotations", NETWORKS)
    if not annotation or w.template.host_network or not _multus_runs(cluster):
        return None
    try:
        networks = requested_networks(str(annotation), w.template.namespace)
    except NetworksError as e:
        return f"Multus refuses its pods' sandbox: {e}"
    for namespace, name in networks:
        why = _missing(cluster, namespace, name)
        if why:
            return f"Multus fails its pods' sandbox (NoNetworkFound): {why}"
    return None


ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = (missing_network,)
