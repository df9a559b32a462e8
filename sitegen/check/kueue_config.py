"""Kueue's controller configuration as a cluster's objects hold it (the chart's ConfigMap), read as Kueue
reads it, and the namespaces it manages: one reading for the rules (KUE-002) and the bring-up."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import yaml

from sitegen.tree.fields import dig
from sitegen.tree.kube_yaml import KubeLoader

CONFIG_KEY = "controller_manager_config.yaml"


@cache
def _parsed(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=KubeLoader) or {}


def configuration(config_maps: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], str] | None:
    """Kueue's configuration (shared: read it, never change it) and the namespace it runs in, from the
    ConfigMap bodies given; None without Kueue."""
    for body in config_maps:
        text = dig(body, "data", CONFIG_KEY)
        if text:
            return _parsed(text), body["metadata"]["namespace"]
    return None


def managed_namespaces(config: Mapping[str, Any], namespace: str) -> Mapping[str, Any]:
    """managedJobsNamespaceSelector, or Kueue's default when unset: every namespace but kube-system and
    Kueue's own."""
    default = {"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", namespace],
    }]}  # fmt: skip
    return config.get("managedJobsNamespaceSelector") or default
