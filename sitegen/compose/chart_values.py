"""The values check: every key our values set must be one the pinned chart declares (values.yaml,
values.schema.json) or reads in its templates (`.Values.a.b`, through `$var := .Values.a` aliases,
`index .Values "a" "b"` and `dig "b" .Values.a`); Helm ignores any other key without a word.

Below a key the chart copies whole (`toYaml .Values.a`), whose default is an empty map, a list or a
scalar, or whose name is label-like (it holds a `/`), anything goes. Maps a chart passes through by
other means are listed in PASS_THROUGH, each with the reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sitegen.cache import stored
from sitegen.tree.kube_yaml import KubeLoader

# (chart, dotted path) -> why the chart takes anything below it
PASS_THROUGH: dict[tuple[str, str], str] = {
    ("argo-cd", "configs.cm"): "the argocd-cm ConfigMap's data, key by key",
    ("argo-cd", "configs.params"): "the argocd-cmd-params-cm ConfigMap's data, key by key",
    ("grafana", "grafana.ini"): "written as grafana.ini, section by section",
    ("opentelemetry-collector", "config"): "merged into the collector's configuration",
    ("loki", "loki.limits_config"): "written into Loki's configuration",
    ("loki", "loki.schemaConfig"): "written into Loki's configuration",
    ("loki", "loki.compactor"): "written into Loki's configuration",
}

_NAME = r"[A-Za-z0-9_]+"
_PATH = rf"((?:\.{_NAME})+)"
_REF = re.compile(rf"\$?\.Values{_PATH}")
_ALIAS = re.compile(rf"\$({_NAME})\s*:?=\s*\(?\s*\$?\.Values{_PATH}")
_INDEX = re.compile(r"index\s+\$?\.Values((?:\s+\"[^\"]+\")+)")
_DIG = re.compile(rf"dig((?:\s+\"[^\"]+\")+)\s+[^ ]+\s+\$?\.Values{_PATH}")
_WHOLE = re.compile(rf"toYaml\s+\(?\s*\$?\.Values{_PATH}\s*\)?\s*[|}}]")
_WITH = re.compile(rf"with\s+\$?\.Values{_PATH}\s*-?}}}}(.{{0,200}}?)toYaml\s+\.\s", re.S)


@dataclass(frozen=True)
class ChartKeys:
    defaults: dict[str, Any]  # values.yaml, each subchart's under its name
    declared: frozenset[str]  # dotted paths of values.schema.json
    read: frozenset[str]  # dotted paths templates read
    whole: frozenset[str]  # dotted paths templates copy whole
    joined: frozenset[str]  # dotted paths templates join or range over (a list is right there)


def _schema_paths(schema: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(schema, dict):
        for key, sub in (schema.get("properties") or {}).items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            yield from _schema_paths(sub, path)


def _references(text: str) -> tuple[set[str], set[str], set[str]]:
    """(paths read, paths copied whole, paths joined or ranged over) of one template file."""
    read = {m.lstrip(".") for m in _REF.findall(text)}
    for name, base in _ALIAS.findall(text):
        for rest in re.findall(rf"\${name}{_PATH}", text):
            read.add(base.lstrip(".") + rest)
    read |= {".".join(re.findall(r"\"([^\"]+)\"", m)) for m in _INDEX.findall(text)}
    for keys, base in _DIG.findall(text):
        read.add(".".join([base.lstrip("."), *re.findall(r"\"([^\"]+)\"", keys)]))
    whole = {m.lstrip(".") for m in _WHOLE.findall(text)} | {m.lstrip(".") for m, _ in _WITH.findall(text)}
    for line in text.splitlines():
        if "toYaml" in line:
            whole |= {m.lstrip(".") for m in _REF.findall(line)}
    for name, base in re.findall(rf"\$({_NAME})\s*:?=[^\n]*?\$?\.Values{_PATH}\s*[^.\w]", text):
        if re.search(rf"toYaml\s+\${name}\b|\${name}\s*\|\s*toYaml", text):
            whole.add(base.lstrip("."))
    joined = {
        m.lstrip(".")
        for m in re.findall(
            rf"(?:join\s+\"[^\"]*\"|range\s+(?:\$\w+\s*,?\s*)*:?=?)\s*\$?\.Values{_PATH}", text
        )
    }
    return read, whole, joined


def _subchart(parts: list[str]) -> str:
    """The parent key of a subchart's files: `<chart>/charts/<sub>/...` -> `sub`."""
    names = [parts[i + 1] for i in range(1, len(parts) - 2) if parts[i] == "charts" and i % 2 == 1]
    return ".".join(names)


_CODE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@cache
def chart_keys(archive: Path) -> ChartKeys:
    """What a chart takes, by archive and this module's code: read from its templates once, then from
    the cache."""
    key = f"{hashlib.sha256(archive.read_bytes()).hexdigest()}-{_CODE}"
    defaults, *paths = stored("chart-keys", key, lambda: _plain(_read_chart_keys(archive)))
    return ChartKeys(defaults, *(frozenset(p) for p in paths))


def _plain(keys: ChartKeys) -> tuple[Any, ...]:
    return keys.defaults, *(sorted(p) for p in (keys.declared, keys.read, keys.whole, keys.joined))


def _read_chart_keys(archive: Path) -> ChartKeys:
    defaults: dict[str, Any] = {}
    subs: dict[str, Any] = {}
    declared: set[str] = set()
    read: set[str] = set()
    whole: set[str] = set()
    joined: set[str] = set()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = member.name.split("/")
            prefix = _subchart(parts)
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            if parts[-1] == "values.yaml" and len(parts) == 2 + 2 * prefix.count(".") + (2 if prefix else 0):
                loaded = yaml.load(data, Loader=KubeLoader) or {}
                subs[prefix] = loaded if prefix else None
                if not prefix:
                    defaults = loaded
            elif parts[-1] == "values.schema.json" and not prefix:
                declared |= set(_schema_paths(json.loads(data)))
            elif "templates" in parts:
                r, w, j = _references(data.decode("utf-8", "replace"))
                at = f"{prefix}." if prefix else ""
                read |= {at + p for p in r}
                whole |= {at + p for p in w}
                joined |= {at + p for p in j}
    for prefix, sub in sorted(subs.items()):
        if not prefix or not isinstance(sub, dict):
            continue
        node = defaults
        *parents, last = prefix.split(".")
        for part in parents:
            node = node.get(part) if isinstance(node.get(part), dict) else {}
        node[last] = {**sub, **node[last]} if isinstance(node.get(last), dict) else sub
    return ChartKeys(defaults, frozenset(declared), frozenset(read), frozenset(whole), frozenset(joined))


def values_problems(chart: str, keys: ChartKeys, values: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted path, problem) of every key of `values` the chart neither declares nor reads, and of
    every list or map given where the chart's default is a string it does not join."""
    out: list[tuple[str, str]] = []

    def free(path: str, default: Any) -> bool:
        return (
            (chart, path) in PASS_THROUGH
            or path in keys.whole
            or not isinstance(default, dict)
            or not default
        )

    def walk(node: dict[str, Any], default: dict[str, Any], path: str) -> None:
        for key, value in node.items():
            here = f"{path}.{key}" if path else key
            declared = key in default or here in keys.declared
            read = here in keys.read or any(r.startswith(here + ".") for r in keys.read)
            if "/" in key:
                continue  # label-like: data of a map, never a chart setting
            if not (declared or read):
                out.append((here, "the chart neither declares nor reads this key: Helm ignores it"))
            elif (
                isinstance(default.get(key), str)
                and isinstance(value, list | dict)
                and here not in keys.joined
                and here not in keys.whole
            ):
                kind = type(value).__name__
                out.append(
                    (here, f"a {kind} where the chart expects a string (its default {default[key]!r})")
                )
            elif isinstance(value, dict) and value and not free(here, default.get(key, {} if read else None)):
                walk(value, default.get(key) or {}, here)

    walk(values, keys.defaults, "")
    return out
