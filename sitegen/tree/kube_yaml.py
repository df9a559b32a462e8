"""YAML as Kubernetes reads it (Go's YAML 1.2 parser), for everything that reads charts and dist/.

PyYAML speaks YAML 1.1: it would turn an unquoted date into a datetime, reject `=` (1.1's value key,
which CRDs use in enums of operators) and read `1e+06` as a string. The API server reads the first
two as strings and the last as a number; so does this loader. libyaml's parser when present.
"""

from __future__ import annotations

import re

import yaml


class KubeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


for _tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"):
    KubeLoader.add_constructor(_tag, lambda loader, node: loader.construct_scalar(node))
KubeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$"), list("-+0123456789")
)
