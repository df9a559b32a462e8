"""Patches of rendered chart objects: what a chart cannot express (`ChartComponent.patches`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JsonPatch:
    """One RFC 6902 operation (add, replace, remove, test) at a JSON pointer of an object."""

    op: str
    path: str
    value: Any = None


@dataclass(frozen=True)
class ObjectPatch:
    """What a chart cannot express: operations on its objects of one kind and name, or (`drop`) the
    objects left out, because another component owns them, or (`copy_as`) a copy of the object under
    another name, the operations applied to the copy. Every patch must match an object."""

    kind: str
    name: str
    why: str
    ops: tuple[JsonPatch, ...] = ()
    drop: bool = False
    copy_as: str | None = None
