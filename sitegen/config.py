"""Load config/ into the site model; every fault becomes one `ConfigFault` naming file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from sitegen.model import ConfigError, Site, dotted

SECTIONS = tuple(Site.model_fields)


class ConfigFault(Exception):
    """A config problem, printed as exactly one line: `<file>: <field>: <message>`."""

    def __init__(self, file: Path, field: str, message: str):
        super().__init__(f"{file}: {field + ': ' if field else ''}{message}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a repeated pool or host key must fail instead."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a mapping key must be a scalar, not {type(key).__name__}",
                    key_node.start_mark,
                ) from None
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} at line {mark.line + 1}", mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigFault(path, "", "file is missing")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigFault(path, "", f"not UTF-8 (byte {err.start})") from None
    except OSError as err:
        raise ConfigFault(path, "", f"cannot read: {err.strerror}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigFault(path, "", f"YAML error: {where}{problem}") from None
    if data is None:
        raise ConfigFault(path, "", "file is empty")
    if not isinstance(data, dict):
        raise ConfigFault(path, "", f"top level must be a mapping, got {type(data).__name__}")
    return data


def load_site(config_dir: Path) -> Site:
    if not config_dir.is_dir():
        raise ConfigFault(config_dir, "", "config directory does not exist")
    raw = {section: _read(config_dir / f"{section}.yaml") for section in SECTIONS}
    try:
        return Site.model_validate(raw)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = tuple(first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] not in ("missing", "extra_forbidden") and not isinstance(
            first["input"], dict | list
        ):
            message += f" (got {first['input']!r})"
        raise _fault(config_dir, loc, message) from None
    except ConfigError as err:
        raise _fault(config_dir, err.loc, err.message) from None


def _fault(config_dir: Path, loc: tuple[str | int, ...], message: str) -> ConfigFault:
    section, *rest = loc or ("",)
    return ConfigFault(config_dir / f"{section}.yaml", dotted(tuple(rest)), message)
