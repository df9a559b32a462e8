"""Broken-config cases: mutations of a private copy of config/, and the check every case must pass.

A case breaks the copy in one way and runs the real CLI against it, with `--out` pointing at a copy of
an already synthesized tree that must come through byte for byte untouched: one `error: <file>: <field>:
<message>` line, exit 2.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import edit_yaml, invoke_sitegen, tree_bytes

# A mutation breaks the config directory it is given; it may return another path to pass as --config.
Mutation = Callable[[Path], Path | None]
Key = str | int


# --- mutations ---------------------------------------------------------------------------------


def _parent(data: Any, path: tuple[Key, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def set_value(file: str, *path: Key, value: Any) -> Mutation:
    """Set the value at `path` (keys and list indices) in `file`, adding the key if it is new."""

    def change(data: Any) -> None:
        _parent(data, path)[path[-1]] = value

    return lambda cfg: edit_yaml(cfg, file, change)


def delete(file: str, *path: Key) -> Mutation:
    def change(data: Any) -> None:
        del _parent(data, path)[path[-1]]

    return lambda cfg: edit_yaml(cfg, file, change)


def append(file: str, *path: Key, value: Any) -> Mutation:
    def change(data: Any) -> None:
        _parent(data, path)[path[-1]].append(value)

    return lambda cfg: edit_yaml(cfg, file, change)


def remove_item(file: str, *path: Key, item: Any) -> Mutation:
    """Remove `item` from the list at `path`."""

    def change(data: Any) -> None:
        _parent(data, path)[path[-1]].remove(item)

    return lambda cfg: edit_yaml(cfg, file, change)


def rename_key(file: str, *path: Key, to: str) -> Mutation:
    """Rename the mapping key at `path`, keeping its position."""

    def change(data: Any) -> None:
        mapping = _parent(data, path)
        items = [(to if k == path[-1] else k, v) for k, v in mapping.items()]
        mapping.clear()
        mapping.update(items)

    return lambda cfg: edit_yaml(cfg, file, change)


def expand_ranges(cfg: Path) -> None:
    """pools.yaml with every host range written out as explicit hosts, for cases that break one host."""
    from sitegen.model.pools import HostRange

    def change(data: Any) -> None:
        for pool in data.values():
            hosts = []
            for entry in pool["hosts"]:
                expanded = HostRange(**entry).expand() if "names" in entry else None
                hosts += (
                    [{"name": h.name, "address": str(h.address)} for h in expanded] if expanded else [entry]
                )
            pool["hosts"] = hosts

    edit_yaml(cfg, "pools.yaml", change)


def on_hosts(mutation: Mutation) -> Mutation:
    """`mutation` applied to pools.yaml with its ranges written out."""
    return both(expand_ranges, mutation)


def write_text(file: str, text: str) -> Mutation:
    def mutate(cfg: Path) -> None:
        (cfg / file).write_text(text)

    return mutate


def add_text(file: str, text: str) -> Mutation:
    """Append raw text, for faults that a YAML round trip cannot express."""

    def mutate(cfg: Path) -> None:
        with (cfg / file).open("a") as handle:
            handle.write(text)

    return mutate


def replace_text(file: str, old: str, new: str) -> Mutation:
    def mutate(cfg: Path) -> None:
        text = (cfg / file).read_text()
        assert text.count(old) == 1, f"{old!r} must occur exactly once in {file}"
        (cfg / file).write_text(text.replace(old, new))

    return mutate


def add_bytes(file: str, data: bytes) -> Mutation:
    def mutate(cfg: Path) -> None:
        path = cfg / file
        path.write_bytes(path.read_bytes() + data)

    return mutate


def remove_file(file: str) -> Mutation:
    return lambda cfg: (cfg / file).unlink()


def missing_directory(cfg: Path) -> Path:
    return cfg.parent / "no-such-config"


def both(*mutations: Mutation) -> Mutation:
    def mutate(cfg: Path) -> None:
        for mutation in mutations:
            mutation(cfg)

    return mutate


# Shorthands for the places most cases break.
GPU_NICS = ("nics", "gpu")
AISTOR_CARVE = ("two-cluster", "clusters", "aistor", "control_plane")
ONE_CLUSTER_AI_POOLS = ("one-cluster", "clusters", "ai", "pools")


def case(case_id: str, mutate: Mutation, file: str, field: str, message: str = "", xfail: str = "") -> Any:
    marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
    return pytest.param(mutate, file, field, message, id=case_id, marks=marks)


def check_case(
    mutate: Mutation, file: str, field: str, message: str, config_copy: Path, out_copy: Path
) -> None:
    config = mutate(config_copy) or config_copy
    before = tree_bytes(out_copy)

    result = invoke_sitegen("synth", "--config", config, "--out", out_copy)

    assert isinstance(result.exception, SystemExit), result.exception  # anything else is a traceback
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    line = result.stderr.removesuffix("\n")
    assert "\n" not in line, f"expected one line, got:\n{result.stderr}"
    assert line.startswith("error: ")
    # `/<file>: <field>: ` pins both exactly: the path ends in the file, the field runs to the next ': '.
    location = f"/{file}: {field}: " if field else f"/{file}: "
    assert location in line
    assert message in line
    assert tree_bytes(out_copy) == before
