"""Argo CD's health assessment, as the deployed Argo CD makes it, for the objects a sync applies.

Which kinds have a check at all: the table of built-in checks of the pinned Argo CD
(`vendor/argocd/health-checks-v3.4.7.txt`, with its source), then the `resource.customizations.health.
<group>_<kind>` entries of the argocd-cm that dist/ renders, which take precedence. A kind with neither
is Healthy as soon as it exists: Argo CD does not wait on it, and neither does the simulation.

A customization runs as Argo CD runs it: Lua 5.1 (Argo CD embeds gopher-lua v1.1.1, a 5.1
implementation that also parses 5.2's `goto`, as LuaJIT 2.1 does, which runs it here) with only the
libraries a health script gets by default (base, table, package; `os` only through `require`, with
`time` and `date`; none of LuaJIT's own), no string methods, and the object as the global `obj`, status
included as its controller wrote it. The script that ships is the script that is tested.

Built-in checks are modelled from the controllers' state (argo.py), or run as the pinned Argo CD's own
Lua where it is vendored (`builtin_script`: vendor/argocd/health/); the ones the simulation has no
model of are listed as assumptions (Healthy once applied).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lupa import luajit21

from sitegen.compose.tools import PROJECT

HEALTH_TABLE = PROJECT / "vendor" / "argocd" / "health-checks-v3.4.7.txt"
BUILTIN_SCRIPTS = PROJECT / "vendor" / "argocd" / "health"  # <group>/<kind>/health.lua, as Argo CD ships them
CUSTOMIZATION = "resource.customizations.health."
STATUSES = ("Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown")


@cache
def builtin_checks(table: Path = HEALTH_TABLE) -> tuple[tuple[str, str], ...]:
    """(group, kind) patterns with a built-in check; `_` stands for any group part or kind."""
    found = []
    for line in table.read_text().splitlines():
        entry = line.split(" (")[0].strip()
        if not entry or entry.startswith("#"):
            continue
        group, _, kind = entry.rpartition("/")
        found.append(("" if group == "v1" else group.replace("_", "*"), kind.replace("_", "*")))
    return tuple(found)


@cache
def has_builtin_check(group: str, kind: str) -> bool:
    return any(fnmatch.fnmatchcase(group, g) and fnmatch.fnmatchcase(kind, k) for g, k in builtin_checks())


@cache
def builtin_script(group: str, kind: str) -> str | None:
    """The pinned Argo CD's own Lua check of the kind, where it is vendored (None: not vendored)."""
    path = BUILTIN_SCRIPTS / (group or "_") / kind / "health.lua"
    return path.read_text() if path.is_file() else None


def customization_key(group: str, kind: str) -> str:
    return f"{CUSTOMIZATION}{group}_{kind}" if group else f"{CUSTOMIZATION}{kind}"


class LuaHealthError(Exception):
    """A health script that does not run, or returns no valid status (Argo CD reports Unknown)."""


_SANDBOX = """
-- what a gopher-lua state with SkipOpenLibs and Argo CD's base, table, package and safe os has
debug.setmetatable("", nil)
local safe_os = {time = os.time, date = os.date}
package.preload["os"] = function() return safe_os end
package.loaded["os"] = nil
string, math, io, os, coroutine, debug, loadfile, dofile = nil, nil, nil, nil, nil, nil, nil, nil
-- LuaJIT's own libraries, which gopher-lua does not have
bit, jit, package.loaded["bit"], package.loaded["jit"], package.preload["ffi"] = nil, nil, nil, nil, nil
"""


def run_health_script(script: str, obj: Mapping[str, Any]) -> tuple[str, str]:
    """The (status, message) a health script gives `obj`."""
    lua = luajit21.LuaRuntime(unpack_returned_tuples=True)
    lua.execute(_SANDBOX)
    lua.globals().obj = _to_lua(lua, obj)
    try:
        result = lua.execute(script)
    except luajit21.LuaError as error:
        raise LuaHealthError(f"the health script failed: {error}") from None
    if result is None or not hasattr(result, "items"):
        raise LuaHealthError("the health script returned no table")
    found = dict(result.items())
    status = found.get("status")
    if status not in STATUSES:
        raise LuaHealthError(f"the health script returned status {status!r}")
    return str(status), str(found.get("message") or "")


def _to_lua(lua: Any, value: Any) -> Any:
    if isinstance(value, Mapping):
        return lua.table_from({k: _to_lua(lua, v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return lua.table_from([_to_lua(lua, v) for v in value])
    return value


@dataclass(frozen=True)
class HealthChecks:
    """The health checks of one Argo CD: its argocd-cm customizations over the built-in table."""

    customizations: Mapping[tuple[str, str], str]

    @classmethod
    def from_config_map(cls, data: Mapping[str, str]) -> HealthChecks:
        found = {}
        for key, script in data.items():
            if key.startswith(CUSTOMIZATION):
                group_kind = key.removeprefix(CUSTOMIZATION)
                group, _, kind = group_kind.rpartition("_")
                found[(group, kind)] = script
        return cls(found)

    def script(self, group: str, kind: str) -> str | None:
        return self.customizations.get((group, kind))

    def checked(self, group: str, kind: str) -> bool:
        """Whether Argo CD assesses the kind's health at all (else: Healthy once it exists)."""
        return (group, kind) in self.customizations or has_builtin_check(group, kind)
