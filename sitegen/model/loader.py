"""Load config/ (and the bases it overlays) into the site model; every fault becomes one `ConfigFault` naming file and field."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from sitegen.errors import SiteError
from sitegen.model.extensions import merged
from sitegen.model.fields import ConfigError, dotted
from sitegen.model.pools import UNION_TAGS
from sitegen.model.site import Site
from sitegen.model.versions import PinNeeds, check_pins

DASHBOARDS = "dashboards"  # a directory of Grafana dashboard JSON files, not a YAML section
SECTIONS = tuple(f for f in Site.model_fields if f != DASHBOARDS)
OPTIONAL_SECTIONS = frozenset({"extensions"})  # a site without one needs no file


# A config file is a page of settings; the largest here (pools.yaml of a 1,020-node site) is 60 KB.
MAX_FILE_BYTES = 1 << 20
EXCERPT = 60  # characters of an offending value shown in an error


def excerpt(value: str, limit: int = EXCERPT) -> str:
    """A value short enough for one error line, marked where it was cut."""
    if len(value) <= limit:
        return value
    return f"{value[: limit - 20]}...[{len(value):,} characters]"


class ConfigFault(SiteError):
    """A config problem, printed as exactly one line: `<file>: <field>: <message>`."""

    def __init__(self, file: Path, field: str, message: str):
        message = " ".join(message.split())  # one line, whatever a value held
        super().__init__(f"{file}: {excerpt(field, 120) + ': ' if field else ''}{excerpt(message, 400)}")
        self.more: list[ConfigFault] = []  # further problems found in the same pass (a line each)

    def lines(self) -> list[str]:
        return [str(each) for each in (self, *self.more)]


_EventLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_aliases(path: Path, text: str) -> None:
    """Aliases (`*name`) let a few lines expand into gigabytes ("billion laughs"); config needs none.
    Checked on the parser's events, before anything is built."""
    for event in yaml.parse(text, Loader=_EventLoader):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            raise ConfigFault(
                path,
                "",
                f"line {mark.line + 1}, column {mark.column + 1}: YAML aliases (*{excerpt(event.anchor, 30)}) "
                "are not allowed in config: write the value out",
            )


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML keeps the last of two equal keys; a repeated pool or host key must fail instead."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}  # key -> its first line
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
            mark = key_node.start_mark
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} at line {mark.line + 1} (first at line {seen[key]})",
                    mark,
                )
            seen[key] = mark.line + 1
        return super().construct_mapping(node, deep=deep)


# YAML 1.2's booleans only (true, false): YAML 1.1 would read yes, no, on, off (a country code NO, a
# label value `on`) as booleans; in config they are text, and a boolean field says so.
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]
    for first, resolvers in _UniqueKeyLoader.yaml_implicit_resolvers.items()
}
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigFault(path, "", "file is missing")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigFault(path, "", f"{size:,} bytes: a config file may hold at most {MAX_FILE_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigFault(path, "", f"not UTF-8 (byte {err.start})") from None
    except OSError as err:
        raise ConfigFault(path, "", f"cannot read: {err.strerror}") from None
    try:
        _refuse_aliases(path, text)
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


OVERLAY = "overlay.yaml"


def _chain(config_dir: Path) -> list[Path]:
    """The config directory and the bases it overlays, nearest first."""
    chain = [config_dir]
    while (config_dir / OVERLAY).is_file():
        overlay = _read(config_dir / OVERLAY)
        unknown = sorted(set(overlay) - {"base", "description"})
        if unknown or not isinstance(overlay.get("base"), str):
            raise ConfigFault(
                config_dir / OVERLAY, unknown[0] if unknown else "base", "expected `base: <dir>`"
            )
        config_dir = (config_dir / overlay["base"]).resolve()
        if not config_dir.is_dir() or config_dir in chain or len(chain) > 8:
            raise ConfigFault(chain[-1] / OVERLAY, "base", f"{overlay['base']} is no config directory")
        chain.append(config_dir)
    return chain


def load_site(config_dir: Path, needs: PinNeeds | None = None) -> Site:
    """The validated site; with `needs`, every chart and image pin the generator uses must exist."""
    if not config_dir.is_dir():
        raise ConfigFault(config_dir, "", "config directory does not exist")
    chain = _chain(config_dir)
    raw: dict[str, Any] = {}
    files: dict[str, Path] = {}
    for section in SECTIONS:
        present = [d / f"{section}.yaml" for d in chain if (d / f"{section}.yaml").exists()]
        if not present and section in OPTIONAL_SECTIONS:
            continue
        if not present:
            raise ConfigFault(config_dir / f"{section}.yaml", "", "file is missing")
        for path in reversed(present):
            raw[section] = merged(raw.get(section), _read(path))
        files[section] = _relative(present[0], config_dir)
    dashboards: dict[str, Path] = {}
    for directory in reversed(chain):
        for path in sorted((directory / DASHBOARDS).glob("*.json")):
            dashboards[path.stem] = path
    raw[DASHBOARDS] = {name: _read_json(path) for name, path in sorted(dashboards.items())}
    for name, path in dashboards.items():
        files[f"{DASHBOARDS}/{name}"] = _relative(path, config_dir)
    try:
        site = Site.model_validate(raw)
        if needs is not None:
            check_pins(site.versions, needs)
        return site
    except ValidationError as err:
        # every field's problem at once; the checks across files run once the fields are right
        faults = [_validation_fault(files, e) for e in err.errors(include_url=False)]
        faults[0].more = faults[1:]
        raise faults[0] from None
    except ConfigError as err:
        raise _fault(files, err.loc, err.message) from None


def _relative(path: Path, config_dir: Path) -> Path:
    """A base file is named relative to the directory the user gave, not by absolute path."""
    try:
        return config_dir / path.resolve().relative_to(config_dir.resolve())
    except ValueError:
        return config_dir / os.path.relpath(path.resolve(), config_dir.resolve())


def _read_json(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigFault(path, "", f"{size:,} bytes: a config file may hold at most {MAX_FILE_BYTES:,}")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigFault(path, "", f"not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ConfigFault(path, "", f"JSON error: line {err.lineno}, column {err.colno}: {err.msg}") from None


def _validation_fault(files: dict[str, Path], error: Any) -> ConfigFault:
    loc = tuple(part for part in error["loc"] if part not in UNION_TAGS)
    message = error["msg"].removeprefix("Value error, ")
    shown = excerpt(repr(error["input"]))
    if (
        error["type"] not in ("missing", "extra_forbidden")
        and not isinstance(error["input"], dict | list)
        and shown not in message
    ):
        message += f" (got {shown})"
    return _fault(files, loc, message)


def _fault(files: dict[str, Path], loc: tuple[str | int, ...], message: str) -> ConfigFault:
    section, *rest = loc or ("",)
    if section == DASHBOARDS and rest and f"{DASHBOARDS}/{rest[0]}" in files:
        section, *rest = (f"{DASHBOARDS}/{rest[0]}", *rest[1:])
    return ConfigFault(files.get(str(section), Path(f"{section}.yaml")), dotted(tuple(rest)), message)
