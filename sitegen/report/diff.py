"""`sitegen diff`: what changes in the clusters between two synthesized trees.

Reads dist/ of two git revisions (or of the working tree) and reports, per variant, cluster and app,
the objects added, removed and changed, with the changed fields of each changed object. A reviewer
sees "Deployment argocd/argo-cd-server: spec.replicas 2 -> 3" before a thousand-line raw diff. The
Applications an ApplicationSet generates are expanded on both sides and reported in the group of the
app each one syncs, whether its element or the template changed.

Only files whose bytes differ are parsed (git blob ids tell which), so a chart bump costs what it
changes, not the size of dist/.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.check.appsets import applications, texts_files
from sitegen.check.tree import Document
from sitegen.compose import fingerprint
from sitegen.compose.kube_yaml import KubeLoader
from sitegen.compose.ownership import KEEPS_DATA
from sitegen.compose.writer import GENERATED
from sitegen.errors import SiteError
from sitegen.model import paths

FIELDS_SHOWN = 12  # changed fields listed per object; the rest are counted
SECTION_GONE = "(section)"
LINES_SHOWN = 200  # lines listed per changed text file (a RUNBOOK section the change adds is read whole)
VALUE_WIDTH = 100  # characters of an old or new value shown


class DiffError(SiteError):
    """A revision git does not know, or no git repository: one line."""


# --- the two trees ----------------------------------------------------------------------------------


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, input=input, check=False)
    if result.returncode != 0:
        raise DiffError(f"git {' '.join(args[:2])}: {result.stderr.decode().strip().splitlines()[-1:]}")
    return result.stdout


def _cat_files(repo: Path, objects: dict[str, str]) -> dict[str, bytes]:
    """The bytes of each git object (a blob id, or `<revision>:<path>`), by key: one git process."""
    batch = _git(repo, "cat-file", "--batch", input="".join(f"{o}\n" for o in objects.values()).encode())
    out, at = {}, 0
    for key in objects:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        out[key] = batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 2 + size
    return out


@dataclass
class Tree:
    """The files of dist/ at a revision (None: the working tree), by path relative to dist/."""

    repo: Path
    revision: str | None
    blobs: dict[str, str] = field(default_factory=dict)  # path -> git blob id

    @classmethod
    def load(cls, repo: Path, dist: str, revision: str | None) -> Tree:
        tree = cls(repo, revision)
        if revision is None:
            root = repo / dist
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                data = path.read_bytes()
                blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id
                tree.blobs[path.relative_to(root).as_posix()] = blob
            return tree
        listing = _git(repo, "ls-tree", "-r", "-z", revision, "--", f"{dist}/")
        for entry in listing.split(b"\0"):
            if entry:
                meta, name = entry.decode().split("\t", 1)
                tree.blobs[str(PurePosixPath(name).relative_to(dist))] = meta.split()[2]
        return tree

    def read(self, dist: str, wanted: list[str]) -> dict[str, bytes]:
        """The bytes of the `wanted` files this tree holds (one git process for all of them)."""
        held = [p for p in wanted if p in self.blobs]
        if self.revision is None:
            return {p: (self.repo / dist / p).read_bytes() for p in held}
        return _cat_files(self.repo, {p: self.blobs[p] for p in held})


# --- objects and fields -----------------------------------------------------------------------------


def _objects(path: str, text: bytes) -> dict[str, dict[str, Any]]:
    """The file's documents by object reference; a document that is no object (values) by file."""
    out = {}
    for doc in yaml.load_all(text.decode("utf-8"), Loader=KubeLoader):
        if isinstance(doc, dict) and doc:
            meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
            if "kind" in doc and meta.get("name"):
                ns = meta.get("namespace")
                out[f"{doc['kind']} {ns + '/' if ns else ''}{meta['name']}"] = doc
            else:
                out[f"{path} [values]" if len(out) == 0 else f"{path} [doc {len(out)}]"] = doc
    return out


def _text(value: Any) -> str:
    return "-" if value is _MISSING else json.dumps(value, sort_keys=True, separators=(", ", ": "))


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


_MISSING: Any = object()


def _leaves(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, value) of every scalar of an object: what a reviewer reads of an added one."""
    if isinstance(node, dict):
        return [leaf for k in sorted(node) for leaf in _leaves(node[k], f"{path}.{k}" if path else str(k))]
    if isinstance(node, list):
        return [leaf for i, item in enumerate(node) for leaf in _leaves(item, f"{path}[{i}]")]
    return [(path, node)]


def _key(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def field_changes(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, old value, new value) of what differs, in path order. Maps go key by key; a list
    whose items moved, came or went is reported as items added (`[+]`) and removed (`[-]`), so one
    entry inserted into a kind list is one line, not a shifted tail."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(old.keys() | new.keys(), key=str):
            here = f"{path}.{key}" if path else str(key)
            out += field_changes(old.get(key, _MISSING), new.get(key, _MISSING), here)
        return out
    if isinstance(old, list) and isinstance(new, list):
        named = _by_name(old), _by_name(new)
        if named[0] is not None and named[1] is not None:  # Kubernetes lists keyed by name (containers, ...)
            before, after = named
            out = []
            for name in sorted(before.keys() | after.keys()):
                out += field_changes(
                    before.get(name, _MISSING), after.get(name, _MISSING), f"{path}[name={name}]"
                )
            return out
        if len(old) == len(new):
            index_wise = [
                field_changes(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(old, new, strict=True))
            ]
            if sum(1 for c in index_wise if c) <= max(1, len(old) // 2):
                return [c for changes in index_wise for c in changes]
        before, after = {_key(i): i for i in old}, {_key(i): i for i in new}
        removed = [(f"{path}[-]", before[k], _MISSING) for k in before if k not in after]
        added = [(f"{path}[+]", _MISSING, after[k]) for k in after if k not in before]
        return removed + added or [(path, old, new)]  # same items, another order
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        return _line_changes(path, old, new)
    return [(path, old, new)]


def _by_name(items: list[Any]) -> dict[str, Any] | None:
    if not items or not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    names = {i["name"]: i for i in items}
    return names if len(names) == len(items) else None


def _line_changes(path: str, old: str, new: str) -> list[tuple[str, Any, Any]]:
    """A multi-line value (a script, a host list, embedded config) as the lines that went and came."""
    before, after = old.splitlines(), new.splitlines()
    gone = [line for line in before if line not in set(after)]
    came = [line for line in after if line not in set(before)]
    return [(f"{path} (line)", line, _MISSING) for line in gone] + [
        (f"{path} (line)", _MISSING, line) for line in came
    ] or [(path, old, new)]


def _comments(data: bytes) -> str:
    """A YAML file's comment lines but the banner every generated file carries."""
    return "\n".join(
        line
        for line in data.decode("utf-8", "replace").splitlines()
        if line.startswith("#") and GENERATED not in line
    )


def _text_changes(path: str, old: bytes | None, new: bytes | None) -> list[tuple[str, Any, Any]]:
    """A text file's lines that went and came; in Markdown (the RUNBOOK) by the section they are in, and
    a section that came whole, so the reviewer reads the steps a change of config/ adds."""
    before = old.decode("utf-8", "replace") if old is not None else ""
    after = new.decode("utf-8", "replace") if new is not None else ""
    if not path.endswith(".md"):
        return [f for f in _line_changes("", before, after) if f[0]]  # not the whole-file fallback
    old_sections, new_sections = _sections(before), _sections(after)
    out: list[tuple[str, Any, Any]] = []
    for title, lines in new_sections.items():
        where = f"§ {title}"
        if title not in old_sections:
            out += [(where, _MISSING, line) for line in lines if line.strip()]
            continue
        changed = _line_changes("", "\n".join(old_sections[title]), "\n".join(lines))
        out += [(where, a, b) for line, a, b in changed if line]  # not the whole-section fallback
    out += [(f"§ {title}", SECTION_GONE, _MISSING) for title in old_sections if title not in new_sections]
    return out


def _sections(text: str) -> dict[str, list[str]]:
    """A Markdown text's lines by the heading above them (a step's number left out of its title: steps
    renumbered by one inserted before them are the same sections)."""
    sections: dict[str, list[str]] = {"(top)": []}
    current = sections["(top)"]
    for line in text.splitlines():
        heading = re.match(r"#+ (?:\d+\. )?(.+)", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        current.append(line)
    return sections


# --- the report -------------------------------------------------------------------------------------


@dataclass
class Change:
    ref: str  # Kind namespace/name, or the file for what is not an object
    state: str  # added, removed, changed
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)
    crd: bool = False
    note: str = ""  # what the change does beyond dist/ (a removed Application's objects)
    text: bool = False  # a text file's lines, not an object's fields


@dataclass
class Group:
    """What changed in one app (or one non-app area) of a cluster of a variant."""

    variant: str
    cluster: str
    app: str
    changes: list[Change] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(c.state == state for c in self.changes)


def _group_key(path: str) -> tuple[str, str, str]:
    where = paths.DistPath.of(path)
    if len(where.path.parts) == 1:
        return "-", "-", path  # beside the variants (the site picture)
    if where.cluster is not None and where.app is not None:
        return where.variant, where.cluster, where.app
    if where.cluster is not None:
        return where.variant, where.cluster, f"{where.area}/{where.in_cluster}"
    return where.variant, "-", str(where.in_variant)


def check_current(repo: Path, dist: str, config: Path) -> None:
    """The working tree's dist/ is what its config/ and code synthesize (the fingerprint synth wrote),
    else a diff of it would hide the change still to synthesize."""
    written = fingerprint.recorded(repo / dist)
    if written is None or not config.is_dir():
        return
    if fingerprint.fingerprint(config, None) != written:
        raise DiffError(
            f"{dist}/ is stale: config/ or the generator changed since the last synth; run `make synth` first"
        )


def check_committed(repo: Path, dist: str, revision: str) -> None:
    """The revision's dist/ is what its own config/ and code synthesize: its INPUTS says which inputs
    it was written from, and the digest of the revision's tracked inputs must match, else the diff
    of two commits would show what their dist/ held, not what they deploy. A revision from before
    dist/ recorded its inputs in this format, or of a repository without the generator, is taken as
    it is."""
    inputs = f"{dist}/{fingerprint.INPUTS}"
    names = _git(repo, "ls-tree", "-r", "-z", "--name-only", revision, "--", inputs).split(b"\0")
    if not any(names):
        return
    written = fingerprint.parse(_git(repo, "show", f"{revision}:{inputs}").decode())
    if written is None or not written.startswith(f"{fingerprint.FORMAT}-"):
        return  # written by an older synth, from inputs digested otherwise
    listed = [
        n.decode() for n in _git(repo, "ls-tree", "-r", "-z", "--name-only", revision).split(b"\0") if n
    ]
    if not any(n.startswith("sitegen/") for n in listed):
        return  # a repository of dist/ alone: nothing to synthesize it from
    config = [PurePosixPath(n).relative_to("config") for n in listed if n.startswith("config/")]
    order = fingerprint.read_order(config, [PurePosixPath(n) for n in listed])
    paths = [f"config/{p}" if root == "config" else str(p) for root, p in order]
    blobs = _cat_files(repo, {p: f"{revision}:{p}" for p in paths})
    computed = fingerprint.digest_of(
        order, lambda root, p: blobs[f"config/{p}" if root == "config" else str(p)], None
    )
    if computed != written:
        raise DiffError(
            f"{dist}/ of {revision} is stale: that commit changed config/ or the generator without "
            "`make synth`; a diff of it would not show what it deploys"
        )


def compare(repo: Path, base: str, head: str | None, dist: str = str(paths.REPO_DIST)) -> list[Group]:
    if head is None:
        check_current(repo, dist, repo / "config")
    for revision in (base, head):
        if revision is not None:
            check_committed(repo, dist, revision)
    old, new = Tree.load(repo, dist, base), Tree.load(repo, dist, head)
    touched = sorted(p for p in old.blobs.keys() | new.blobs.keys() if old.blobs.get(p) != new.blobs.get(p))
    old_bytes, new_bytes = old.read(dist, touched), new.read(dist, touched)
    groups: dict[tuple[str, str, str], Group] = {}
    for path in touched:
        if path == str(fingerprint.INPUTS):
            continue  # what synth read, not what a cluster gets (checked above, never shown)
        key = _group_key(path)
        group = groups.setdefault(key, Group(*key))
        if path.endswith(f"/{paths.APP_DESCRIPTOR}"):
            continue  # an ApplicationSet's element: its generated Application is compared below
        if not path.endswith(".yaml"):  # the runbook, containerd's hosts.toml, key policies, the picture
            state = "added" if path not in old.blobs else "removed" if path not in new.blobs else "changed"
            lines = (
                [] if path.endswith(".svg") else _text_changes(path, old_bytes.get(path), new_bytes.get(path))
            )
            group.changes.append(Change(path, state, lines, text=True))
            continue
        before = _objects(path, old_bytes[path]) if path in old_bytes else {}
        after = _objects(path, new_bytes[path]) if path in new_bytes else {}
        if before == after and path in old_bytes and path in new_bytes:
            # only its comments changed: a kubeadm join file's header holds the NODE=IP list of the
            # hosts to join, which an operator types
            lines = [
                f for f in _line_changes("", _comments(old_bytes[path]), _comments(new_bytes[path])) if f[0]
            ]
            if lines:
                group.changes.append(Change(path, "changed", lines, text=True))
            continue
        for ref in sorted(before.keys() | after.keys()):
            crd = (after.get(ref) or before.get(ref) or {}).get("kind") == "CustomResourceDefinition"
            if ref not in before:
                fields = (
                    []
                    if crd
                    else [
                        (f, _MISSING, v)
                        for f, v in _leaves(after[ref])
                        if f.split(".")[0] not in ("apiVersion", "kind", "metadata")
                    ]
                )
                group.changes.append(Change(ref, "added", fields, crd=crd))
            elif ref not in after:
                group.changes.append(Change(ref, "removed", crd=crd))
            elif before[ref] != after[ref]:
                group.changes.append(Change(ref, "changed", field_changes(before[ref], after[ref]), crd))
    for key, change in _generated_changes(old, new, dist, touched):
        groups.setdefault(key, Group(*key)).changes.append(change)
    return [groups[k] for k in sorted(groups) if groups[k].changes]


def _generated(
    tree: Tree, dist: str, variants: set[str]
) -> dict[str, tuple[tuple[str, str, str], dict[str, Any]]]:
    """The Applications the variants' ApplicationSets generate in `tree`, by name, with the group of the
    app folder each one syncs."""
    wanted = [
        p for p in tree.blobs
        if paths.DistPath.of(p).variant in variants
        and (p.endswith(f"/{paths.APP_DESCRIPTOR}") or ".applicationset." in PurePosixPath(p).name)
    ]  # fmt: skip
    files = {p: b.decode("utf-8") for p, b in tree.read(dist, wanted).items()}
    docs = [
        Document(PurePosixPath(p), i, body)
        for p, text in files.items()
        if p.endswith(".yaml")
        for i, body in enumerate(d for d in yaml.load_all(text, Loader=KubeLoader) if isinstance(d, dict))
    ]
    elements = {PurePosixPath(p): t for p, t in files.items() if p.endswith(paths.APP_DESCRIPTOR)}
    apps, _ = applications(docs, texts_files(elements, PurePosixPath(dist)))
    found = {}
    for app in apps:
        folder = paths.from_repo(str(app.sources[0].get("path", ""))) if app.sources else None
        key = _group_key(f"{folder}/x") if folder else (app.source.variant, "-", "bootstrap")
        found[f"{key[0]}/{app.name}"] = (key, app.body)
    return found


def _generated_changes(
    old: Tree, new: Tree, dist: str, touched: list[str]
) -> list[tuple[tuple[str, str, str], Change]]:
    """Generated Applications added, removed or changed, in the group of the app each one syncs: a
    reviewer sees which app changes where, not an element file or a template."""
    variants = {
        paths.DistPath.of(p).variant
        for p in touched
        if p.endswith(f"/{paths.APP_DESCRIPTOR}") or ".applicationset." in PurePosixPath(p).name
    }
    if not variants:
        return []
    before, after = _generated(old, dist, variants), _generated(new, dist, variants)
    out = []
    for name in sorted(before.keys() | after.keys()):
        key, body = after.get(name) or before[name]
        ref = f"Application {body['metadata'].get('namespace', '')}/{body['metadata']['name']} (generated)"
        if name not in before:
            out.append((key, Change(ref, "added")))
        elif name not in after:
            note = _left_behind(old, new, key, [after[n][0] for n in after if n not in before])
            out.append((key, Change(ref, "removed", note=note)))
        elif before[name][1] != after[name][1]:
            out.append((key, Change(ref, "changed", field_changes(before[name][1], after[name][1]))))
    return out


_DATA_KINDS = {kind.lower() for _, kind in KEEPS_DATA}


def _left_behind(old: Tree, new: Tree, key: tuple[str, str, str], added: list[tuple[str, str, str]]) -> str:
    """What deleting a generated Application does in the cluster: its ApplicationSet keeps no resources
    finalizer, so its objects stay; another app that now ships the same objects (a rename) adopts them."""
    variant, cluster, app = key
    folder = f"{variant}/{paths.APPS}/{cluster}/{app}/"
    mine = {p[len(folder) :] for p in old.blobs if p.startswith(folder) and p.endswith(".yaml")}
    for other in added:
        theirs = f"{other[0]}/{paths.APPS}/{other[1]}/{other[2]}/"
        if mine & {p[len(theirs) :] for p in new.blobs if p.startswith(theirs)}:
            return f"its ApplicationSet deletes it, leaving its {len(mine)} objects to {other[2]}, which adopts them"
    data = sorted(f for f in mine if _DATA_KINDS & set(f.split(".")))
    held = f", {len(data)} holding data or other objects ({', '.join(data[:3])}{', ...' if len(data) > 3 else ''})"
    return (
        f"its ApplicationSet deletes it and leaves its {len(mine)} objects running, unmanaged"
        f"{held if data else ''}: delete them by hand (RUNBOOK: removing apps)"
    )


COMMON_AT = 3  # a field change made the same way in this many objects of an app is said once


def _field_key(field: tuple[str, Any, Any]) -> tuple[str, str, str]:
    path, old, new = field
    return path, _text(old), _text(new)


def _common(group: Group) -> dict[tuple[str, str, str], int]:
    """Field changes made alike in COMMON_AT or more changed objects of the group (a chart bump's
    `helm.sh/chart` and version labels): said once at the top, left out of each object."""
    counts: dict[tuple[str, str, str], int] = {}
    for change in group.changes:
        if change.state != "changed":
            continue  # an added object reads as an object, with its own fields
        for key in {_field_key(f) for f in change.fields}:
            counts[key] = counts.get(key, 0) + 1
    return {k: n for k, n in sorted(counts.items()) if n >= COMMON_AT}


def _common_lines(common: dict[tuple[str, str, str], int]) -> list[str]:
    return [f"in {n} objects: {p}: {_pair(_parsed(a), _parsed(b))}" for (p, a, b), n in common.items()]


def _parsed(text: str) -> Any:
    """A value back from `_text` (an absent one included: a field added or dropped alike)."""
    return _MISSING if text == "-" else json.loads(text)


def _field_lines(change: Change, skip: Set[tuple[str, str, str]] = frozenset()) -> list[str]:
    fields = [f for f in change.fields if _field_key(f) not in skip]
    if change.crd:
        schema = [f for f in fields if ".schema.openAPIV3Schema." in f[0]]
        other = [f for f in fields if f not in schema]
        lines = [f"{p}: {_pair(a, b)}" for p, a, b in other[:FIELDS_SHOWN]]
        return lines + ([f"schema changed: {len(schema)} fields"] if schema else [])
    if change.text:
        return _text_lines(fields)
    if change.state == "added":
        return _added_lines(fields)
    lines = [f"{p}: {_pair(a, b)}" for p, a, b in fields[:FIELDS_SHOWN]]
    if len(fields) > FIELDS_SHOWN:
        lines.append(f"... and {len(fields) - FIELDS_SHOWN} more fields")
    return lines


ADDED_SHOWN = 6  # fields of an added object: what it runs, how much, when
# what a reviewer of a new object reads first, in this order
_MATTERS = ("image", "replicas", "schedule", "nominalQuota", "hard.", "requests", "limits", "value", "data.")


def _added_lines(fields: list[tuple[str, Any, Any]]) -> list[str]:
    """An added object's few fields that matter (its images, replicas, schedule, quotas, requests),
    its values as they are, then how many more it holds."""
    rank = {f[0]: next((i for i, m in enumerate(_MATTERS) if m in f[0]), len(_MATTERS)) for f in fields}
    chosen = sorted(fields, key=lambda f: rank[f[0]])[:ADDED_SHOWN]
    lines = [f"{p}: {_one(b)}" for p, _, b in sorted(chosen, key=fields.index)]
    if len(fields) > ADDED_SHOWN:
        lines.append(f"... and {len(fields) - ADDED_SHOWN} more fields")
    return lines


def _text_lines(fields: list[tuple[str, Any, Any]]) -> list[str]:
    """A text file's lines as they read, `-` gone and `+` come, under the section they are in."""
    lines: list[str] = []
    section = None
    for where, old, new in fields[:LINES_SHOWN]:
        if where.startswith("§") and where != section:
            section = where
            lines.append(f"{where}:")
        indent = "  " if section else ""
        if old is not _MISSING:
            lines.append(f"{indent}- {old}" if old != SECTION_GONE else f"{indent}(the section goes)")
        if new is not _MISSING:
            lines.append(f"{indent}+ {new}")
    if len(fields) > LINES_SHOWN:
        lines.append(f"... and {len(fields) - LINES_SHOWN} more lines")
    return lines


def _summary(groups: list[Group]) -> str:
    totals = {s: sum(g.count(s) for g in groups) for s in ("added", "removed", "changed")}
    apps = len(groups)
    return f"{totals['added']} added, {totals['removed']} removed, {totals['changed']} changed in {apps} apps"


def _body(g: Group, indent: str, detail: str) -> list[str]:
    common = _common(g)
    lines = [f"{indent}~ {line}" for line in _common_lines(common)]
    for change in g.changes:
        mark = {"added": "+", "removed": "-", "changed": "~"}[change.state]
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
            f"{', '.join(variants)} {g.cluster} {g.app}: +{g.count('added')} -{g.count('removed')} ~{g.count('changed')}"
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
        f"| {', '.join(v)} | {g.cluster} | `{g.app}` | {g.count('added')} | {g.count('removed')} | {g.count('changed')} |"
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
                "state": c.state,
                **({"note": c.note} if c.note else {}),
                "fields": [{"path": p, "old": None if a is _MISSING else a, "new": None if b is _MISSING else b}
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
