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
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from sitegen.check.appsets import applications, texts_files
from sitegen.compose import fingerprint
from sitegen.compose.ownership import KEEPS_DATA
from sitegen.compose.writer import GENERATED
from sitegen.errors import SiteError
from sitegen.model import paths
from sitegen.tree.documents import documents

SECTION_GONE = "(section)"


class DiffError(SiteError):
    """A revision git does not know, or no git repository: one line."""


# --- the two trees ----------------------------------------------------------------------------------


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, input=input, check=False)
    if result.returncode != 0:
        said = result.stderr.decode().strip().splitlines() or [f"exit status {result.returncode}"]
        raise DiffError(f"git {' '.join(args[:2])}: {said[-1]}")
    return result.stdout


def repository_root(where: Path) -> Path:
    """The top of the git work tree `where` is in: `dist` and revisions are read from there, so a diff
    run from config/ compares the same dist/ (not an empty one, which read as no change)."""
    result = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=where, capture_output=True, check=False
    )
    if result.returncode != 0:
        raise DiffError(f"{where} is not inside a git repository: sitegen diff compares commits of one")
    return Path(result.stdout.decode().strip())


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
class DistAt:
    """The files of dist/ at a revision (None: the working tree), by path relative to dist/."""

    repo: Path
    revision: str | None
    blobs: dict[str, str] = field(default_factory=dict)  # path -> git blob id

    @classmethod
    def load(cls, repo: Path, dist: str, revision: str | None) -> DistAt:
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
    for doc in documents(PurePosixPath(path), text):
        if doc.wrapped or not doc.body:
            continue
        meta = doc.body.get("metadata")
        if doc.kind and isinstance(meta, dict) and meta.get("name"):
            out[doc.ref] = doc.body
        else:
            shown = _in_variant(path)
            out[f"{shown} [values]" if len(out) == 0 else f"{shown} [doc {len(out)}]"] = doc.body
    return out


def _in_variant(path: str) -> str:
    """A file as a change names it: within its variant (which the group says), so that a change made
    alike in several variants reads alike and is listed once."""
    where = paths.DistPath.of(path)
    return path if len(where.path.parts) == 1 else str(where.in_variant)


MISSING: Any = object()  # a field or line one side does not have


class FieldChange(NamedTuple):
    """One field (or line) of an object or file that differs: MISSING on the side that lacks it."""

    path: str
    old: Any
    new: Any


def _leaves(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, value) of every scalar of an object: what a reviewer reads of an added one."""
    if isinstance(node, dict):
        return [leaf for k in sorted(node) for leaf in _leaves(node[k], f"{path}.{k}" if path else str(k))]
    if isinstance(node, list):
        return [leaf for i, item in enumerate(node) for leaf in _leaves(item, f"{path}[{i}]")]
    return [(path, node)]


def _key(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def field_changes(old: Any, new: Any, path: str = "") -> list[FieldChange]:
    """(path, old value, new value) of what differs, in path order. Maps go key by key; a list
    whose items moved, came or went is reported as items added (`[+]`) and removed (`[-]`), so one
    entry inserted into a kind list is one line, not a shifted tail."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(old.keys() | new.keys(), key=str):
            here = f"{path}.{key}" if path else str(key)
            out += field_changes(old.get(key, MISSING), new.get(key, MISSING), here)
        return out
    if isinstance(old, list) and isinstance(new, list):
        named = _by_name(old), _by_name(new)
        if named[0] is not None and named[1] is not None:  # Kubernetes lists keyed by name (containers, ...)
            before, after = named
            out = []
            for name in sorted(before.keys() | after.keys()):
                out += field_changes(
                    before.get(name, MISSING), after.get(name, MISSING), f"{path}[name={name}]"
                )
            return out
        if len(old) == len(new):
            index_wise = [
                field_changes(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(old, new, strict=True))
            ]
            if sum(1 for c in index_wise if c) <= max(1, len(old) // 2):
                return [c for changes in index_wise for c in changes]
        before, after = {_key(i): i for i in old}, {_key(i): i for i in new}
        removed = [FieldChange(f"{path}[-]", before[k], MISSING) for k in before if k not in after]
        added = [FieldChange(f"{path}[+]", MISSING, after[k]) for k in after if k not in before]
        return removed + added or [FieldChange(path, old, new)]  # same items, another order
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        return _line_changes(path, old, new)
    return [FieldChange(path, old, new)]


def _by_name(items: list[Any]) -> dict[str, Any] | None:
    if not items or not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    names = {i["name"]: i for i in items}
    return names if len(names) == len(items) else None


def _line_changes(path: str, old: str, new: str) -> list[FieldChange]:
    """A multi-line value (a script, a host list, embedded config) as the lines that went and came."""
    before, after = old.splitlines(), new.splitlines()
    gone = [line for line in before if line not in set(after)]
    came = [line for line in after if line not in set(before)]
    return [FieldChange(f"{path} (line)", line, MISSING) for line in gone] + [
        FieldChange(f"{path} (line)", MISSING, line) for line in came
    ] or [FieldChange(path, old, new)]


def _comments(data: bytes) -> str:
    """A YAML file's comment lines but the banner every generated file carries."""
    return "\n".join(
        line
        for line in data.decode("utf-8", "replace").splitlines()
        if line.startswith("#") and GENERATED not in line
    )


def _text_changes(path: str, old: bytes | None, new: bytes | None) -> list[FieldChange]:
    """A text file's lines that went and came; in Markdown (the RUNBOOK) by the section they are in, and
    a section that came whole, so the reviewer reads the steps a change of config/ adds."""
    before = old.decode("utf-8", "replace") if old is not None else ""
    after = new.decode("utf-8", "replace") if new is not None else ""
    if not path.endswith(".md"):
        return [f for f in _line_changes("", before, after) if f.path]  # not the whole-file fallback
    old_sections, new_sections = _sections(before), _sections(after)
    out: list[FieldChange] = []
    for title, lines in new_sections.items():
        where = f"§ {title}"
        if title not in old_sections:
            out += [FieldChange(where, MISSING, line) for line in lines if line.strip()]
            continue
        changed = _line_changes("", "\n".join(old_sections[title]), "\n".join(lines))
        out += [FieldChange(where, f.old, f.new) for f in changed if f.path]  # not the whole-section fallback
    out += [
        FieldChange(f"§ {title}", SECTION_GONE, MISSING)
        for title in old_sections
        if title not in new_sections
    ]
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


class State(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass
class Change:
    ref: str  # Kind namespace/name, or the file for what is not an object
    state: State
    fields: list[FieldChange] = field(default_factory=list)
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

    def count(self, state: State) -> int:
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
    old, new = DistAt.load(repo, dist, base), DistAt.load(repo, dist, head)
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
            state = (
                State.ADDED
                if path not in old.blobs
                else State.REMOVED
                if path not in new.blobs
                else State.CHANGED
            )
            lines = (
                [] if path.endswith(".svg") else _text_changes(path, old_bytes.get(path), new_bytes.get(path))
            )
            group.changes.append(Change(_in_variant(path), state, lines, text=True))
            continue
        before = _objects(path, old_bytes[path]) if path in old_bytes else {}
        after = _objects(path, new_bytes[path]) if path in new_bytes else {}
        if before == after and path in old_bytes and path in new_bytes:
            # only its comments changed: a kubeadm join file's header holds the NODE=IP list of the
            # hosts to join, which an operator types
            lines = [
                f for f in _line_changes("", _comments(old_bytes[path]), _comments(new_bytes[path])) if f.path
            ]
            if lines:
                group.changes.append(Change(_in_variant(path), State.CHANGED, lines, text=True))
            continue
        for ref in sorted(before.keys() | after.keys()):
            crd = (after.get(ref) or before.get(ref) or {}).get("kind") == "CustomResourceDefinition"
            if ref not in before:
                fields = (
                    []
                    if crd
                    else [
                        FieldChange(f, MISSING, v)
                        for f, v in _leaves(after[ref])
                        if f.split(".")[0] not in ("apiVersion", "kind", "metadata")
                    ]
                )
                group.changes.append(Change(ref, State.ADDED, fields, crd=crd))
            elif ref not in after:
                group.changes.append(Change(ref, State.REMOVED, crd=crd))
            elif before[ref] != after[ref]:
                group.changes.append(Change(ref, State.CHANGED, field_changes(before[ref], after[ref]), crd))
    for key, change in _generated_changes(old, new, dist, touched):
        groups.setdefault(key, Group(*key)).changes.append(change)
    return [groups[k] for k in sorted(groups) if groups[k].changes]


def _generates_apps(path: str) -> bool:
    """An ApplicationSet's file or an element it reads: what the generated Applications come from."""
    return path.endswith(f"/{paths.APP_DESCRIPTOR}") or ".applicationset." in PurePosixPath(path).name


def _generated(
    tree: DistAt, dist: str, variants: set[str]
) -> dict[str, tuple[tuple[str, str, str], dict[str, Any]]]:
    """The Applications the variants' ApplicationSets generate in `tree`, by name, with the group of the
    app folder each one syncs."""
    wanted = [
        p for p in tree.blobs
        if paths.DistPath.of(p).variant in variants
        and _generates_apps(p)
    ]  # fmt: skip
    blobs = tree.read(dist, wanted)
    files = {p: b.decode("utf-8") for p, b in blobs.items()}
    docs = [
        doc
        for p, data in blobs.items()
        if p.endswith(".yaml")
        for doc in documents(PurePosixPath(p), data)
        if not doc.wrapped
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
    old: DistAt, new: DistAt, dist: str, touched: list[str]
) -> list[tuple[tuple[str, str, str], Change]]:
    """Generated Applications added, removed or changed, in the group of the app each one syncs: a
    reviewer sees which app changes where, not an element file or a template."""
    variants = {paths.DistPath.of(p).variant for p in touched if _generates_apps(p)}
    if not variants:
        return []
    before, after = _generated(old, dist, variants), _generated(new, dist, variants)
    out = []
    for name in sorted(before.keys() | after.keys()):
        key, body = after.get(name) or before[name]
        ref = f"Application {body['metadata'].get('namespace', '')}/{body['metadata']['name']} (generated)"
        if name not in before:
            out.append((key, Change(ref, State.ADDED)))
        elif name not in after:
            note = _left_behind(old, new, key, [after[n][0] for n in after if n not in before])
            out.append((key, Change(ref, State.REMOVED, note=note)))
        elif before[name][1] != after[name][1]:
            out.append((key, Change(ref, State.CHANGED, field_changes(before[name][1], after[name][1]))))
    return out


_DATA_KINDS = {kind.lower() for _, kind in KEEPS_DATA}


def _left_behind(
    old: DistAt, new: DistAt, key: tuple[str, str, str], added: list[tuple[str, str, str]]
) -> str:
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
