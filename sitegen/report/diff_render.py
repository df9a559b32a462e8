"""How `sitegen diff` reads: the changes of sitegen.report.diff as text for a terminal, Markdown for a
pull request comment (a summary first, the detail folded, within a size), or JSON."""

from __future__ import annotations

import json
from collections.abc import Set
from typing import Any

from sitegen.report.diff import MISSING, SECTION_GONE, Change, FieldChange, Group, State

FIELDS_SHOWN = 12  # changed fields listed per object; the rest are counted
LINES_SHOWN = 200  # lines listed per changed text file (a RUNBOOK section the change adds is read whole)
VALUE_WIDTH = 100  # characters of an old or new value shown


def _text(value: Any) -> str:
    return "-" if value is MISSING else json.dumps(value, sort_keys=True, separators=(", ", ": "))


def _one(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def _pair(old: Any, new: Any) -> str:
    """`old -> new`, each cut to VALUE_WIDTH around where they first differ: two long values that
    share their start must not print the same."""
    a, b = _text(old), _text(new)
    if len(a) <= VALUE_WIDTH and len(b) <= VALUE_WIDTH:
        return f"{a} -> {b}"
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, same - VALUE_WIDTH // 4)

    def window(text: str) -> str:
        cut = text[start : start + VALUE_WIDTH - 6]
        return ("..." if start else "") + cut + ("..." if start + len(cut) < len(text) else "")

    return f"{window(a)} -> {window(b)}"


COMMON_AT = 3  # a field change made the same way in this many objects of an app is said once


def _field_key(field: FieldChange) -> tuple[str, str, str]:
    """What makes two field changes alike: the path and both values as printed (values may be unhashable)."""
    return field.path, _text(field.old), _text(field.new)


def _common(group: Group) -> dict[tuple[str, str, str], tuple[FieldChange, int]]:
    """Field changes made alike in COMMON_AT or more changed objects of the group (a chart bump's
    `helm.sh/chart` and version labels), with how many: said once at the top, left out of each object."""
    found: dict[tuple[str, str, str], tuple[FieldChange, int]] = {}
    for change in group.changes:
        if change.state != State.CHANGED:
            continue  # an added object reads as an object, with its own fields
        for key, f in {_field_key(f): f for f in change.fields}.items():
            found[key] = (f, found[key][1] + 1 if key in found else 1)
    return {key: (f, n) for key, (f, n) in sorted(found.items(), key=lambda kv: kv[0]) if n >= COMMON_AT}


def _common_lines(common: dict[tuple[str, str, str], tuple[FieldChange, int]]) -> list[str]:
    return [f"in {n} objects: {f.path}: {_pair(f.old, f.new)}" for f, n in common.values()]


def _field_lines(change: Change, skip: Set[tuple[str, str, str]] = frozenset()) -> list[str]:
    fields = [f for f in change.fields if _field_key(f) not in skip]
    if change.crd:
        schema = [f for f in fields if ".schema.openAPIV3Schema." in f.path]
        other = [f for f in fields if f not in schema]
        lines = [f"{p}: {_pair(a, b)}" for p, a, b in other[:FIELDS_SHOWN]]
        return lines + ([f"schema changed: {len(schema)} fields"] if schema else [])
    if change.text:
        return _text_lines(fields)
    if change.state == State.ADDED:
        return _added_lines(fields)
    lines = [f"{p}: {_pair(a, b)}" for p, a, b in fields[:FIELDS_SHOWN]]
    if len(fields) > FIELDS_SHOWN:
        lines.append(f"... and {len(fields) - FIELDS_SHOWN} more fields")
    return lines


ADDED_SHOWN = 6  # fields of an added object: what it runs, how much, when
# what a reviewer of a new object reads first, in this order
_MATTERS = ("image", "replicas", "schedule", "nominalQuota", "hard.", "requests", "limits", "value", "data.")


def _added_lines(fields: list[FieldChange]) -> list[str]:
    """An added object's few fields that matter (its images, replicas, schedule, quotas, requests),
    its values as they are, then how many more it holds."""
    rank = {f.path: next((i for i, m in enumerate(_MATTERS) if m in f.path), len(_MATTERS)) for f in fields}
    chosen = sorted(fields, key=lambda f: rank[f.path])[:ADDED_SHOWN]
    lines = [f"{p}: {_one(b)}" for p, _, b in sorted(chosen, key=fields.index)]
    if len(fields) > ADDED_SHOWN:
        lines.append(f"... and {len(fields) - ADDED_SHOWN} more fields")
    return lines


def _text_lines(fields: list[FieldChange]) -> list[str]:
    """A text file's lines as they read, `-` gone and `+` come, under the section they are in."""
    lines: list[str] = []
    section = None
    for where, old, new in fields[:LINES_SHOWN]:
        if where.startswith("§") and where != section:
            section = where
            lines.append(f"{where}:")
        indent = "  " if section else ""
        if old is not MISSING:
            lines.append(f"{indent}- {old}" if old != SECTION_GONE else f"{indent}(the section goes)")
        if new is not MISSING:
            lines.append(f"{indent}+ {new}")
    if len(fields) > LINES_SHOWN:
        lines.append(f"... and {len(fields) - LINES_SHOWN} more lines")
    return lines


def _summary(groups: list[Group]) -> str:
    totals = {s: sum(g.count(s) for g in groups) for s in State}
    counts = ", ".join(f"{totals[s]} {s}" for s in State)
    apps = sum("/" not in g.app for g in groups)  # an Application's folder; the rest are files
    files = len(groups) - apps
    named = ((apps, "app"), (files, "file"))
    where = " and ".join(f"{n} {w}{'s' if n != 1 else ''}" for n, w in named if n) or "0 apps"
    return f"{counts} in {where}"


_MARKS = {State.ADDED: "+", State.REMOVED: "-", State.CHANGED: "~"}


def _body(g: Group, indent: str, detail: str) -> list[str]:
    common = _common(g)
    lines = [f"{indent}~ {line}" for line in _common_lines(common)]
    for change in g.changes:
        mark = _MARKS[change.state]
        lines.append(f"{indent}{mark} {change.ref}" + (f": {change.note}" if change.note else ""))
        lines += [f"{detail}{line}" for line in _field_lines(change, set(common))]
    return lines


def _merged(groups: list[Group], indent: str, detail: str) -> list[tuple[list[str], Group, list[str]]]:
    """(variants, group, body lines): a change made alike in several variants is listed once."""
    merged: dict[tuple[str, str, tuple[str, ...]], tuple[list[str], Group, list[str]]] = {}
    for g in groups:
        body = _body(g, indent, detail)
        key = (g.cluster, g.app, tuple(body))
        if key in merged:
            merged[key][0].append(g.variant)
        else:
            merged[key] = ([g.variant], g, body)
    return list(merged.values())


def render_text(groups: list[Group]) -> str:
    if not groups:
        return "no change in dist/\n"
    out = []
    for variants, g, body in _merged(groups, "  ", "      "):
        out.append(
            f"{', '.join(variants)} {g.cluster} {g.app}: "
            + " ".join(f"{_MARKS[s]}{g.count(s)}" for s in State)
        )
        out += body
    out.append(_summary(groups))
    return "\n".join(out) + "\n"


def render_markdown(groups: list[Group], limit: int | None = None, more: str = "") -> str:
    """The summary, a table of the apps, then each app's changes folded. Within `limit` bytes (a pull
    request comment holds 65,536 characters), whole: the table and the folds end at a row or a fold,
    never inside one, and a last line says how many are left out and where to read them (`more`)."""
    if not groups:
        return "No change in `dist/`.\n"
    merged = _merged(groups, "", "    ")
    head = [
        f"**{_summary(groups)}**",
        "",
        "| variant | cluster | app | added | removed | changed |",
        "|---|---|---|---|---|---|",
    ]
    rows = [
        f"| {', '.join(v)} | {g.cluster} | `{g.app}` | " + " | ".join(str(g.count(s)) for s in State) + " |"
        for v, g, _ in merged
    ]
    folds = [
        "\n".join(
            [
                "",
                f"<details><summary>{', '.join(v)} / {g.cluster} / {g.app}</summary>",
                "",
                "```",
                *body,
                "```",
                "</details>",
            ]
        )
        for v, g, body in merged
    ]
    room = None if limit is None else limit - 400  # the closing line's
    out, used, rows_left, folds_left = list(head), sum(len(line) + 1 for line in head), 0, 0
    for i, row in enumerate(rows):
        if room is not None and used + len(row.encode()) + 1 > room:
            rows_left = len(rows) - i
            break
        out.append(row)
        used += len(row.encode()) + 1
    for i, fold in enumerate([] if rows_left else folds):
        if room is not None and used + len(fold.encode()) + 1 > room:
            folds_left = len(folds) - i
            break
        out.append(fold)
        used += len(fold.encode()) + 1
    if rows_left or folds_left:
        left = (
            f"{rows_left} more apps, and the changes of every app,"
            if rows_left
            else f"the changes of {folds_left} more apps"
        )
        out += ["", f"_{left} do not fit here{': see ' + more if more else ''}._"]
    return "\n".join(out) + "\n"


def render_json(groups: list[Group]) -> str:
    """The same for scripts: a list of {variants, cluster, app, changes: [{ref, state, fields}]}, a
    change made alike in several variants once."""
    out = []
    for variants, g, _ in _merged(groups, "", ""):
        changes = [
            {
                "ref": c.ref,
                "state": str(c.state),
                **({"note": c.note} if c.note else {}),
                "fields": [{"path": p, "old": None if a is MISSING else a, "new": None if b is MISSING else b}
                           for p, a, b in c.fields],
            }
            for c in g.changes
        ]  # fmt: skip
        out.append({"variants": variants, "cluster": g.cluster, "app": g.app, "changes": changes})
    return json.dumps(out, indent=2, sort_keys=True, default=str) + "\n"


_COLOURS = {"+": "green", "-": "red", "~": "yellow"}


def coloured(text: str) -> str:
    """The text report for a terminal: added objects green, removed red, changed yellow, the app
    headings bold (NO_COLOR, or output to a pipe or file, keeps it plain)."""
    import click

    lines = []
    for line in text.splitlines():
        marker = line.lstrip()[:1]
        if line and not line.startswith(" "):
            line = click.style(line, bold=True)
        elif marker in _COLOURS and line.lstrip()[1:2] == " ":
            line = click.style(line, fg=_COLOURS[marker])
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
