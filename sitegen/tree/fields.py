"""An optional field of an object read back, as the API server reads one: a step that is missing, null or
empty has nothing below it."""

from __future__ import annotations

from typing import Any


def dig(value: Any, *keys: str, default: Any = None) -> Any:
    """`value[k1][k2]...`, or `default` where a step is missing or null (or an empty mapping, or anything
    falsy: `spec: {}`, `annotations: null` and no `annotations` read the same). A step that holds
    something other than a mapping is a malformed object: TypeError, as indexing it would be. (The
    bring-up calls this about a million times per variant: no isinstance check on the way.)"""
    key = ""
    try:
        for key in keys:
            if not value:
                return default
            value = value.get(key)
    except AttributeError:
        raise TypeError(f"{key!r} read from a {type(value).__name__}, not a mapping") from None
    return default if value is None else value
