"""Hydration: every chart app rendered at synth through its pinned chart, one file per object.

`helm template` runs with the app's release name and namespace, the site's Kubernetes version and the
cluster's API versions (Helm's built-in ones plus every group/version the cluster's components declare
they serve, each checked against the CRDs its chart renders), CRDs included as Argo CD would. The objects are given their namespace where a namespaced
object has none (what the destination namespace would do), patched where a chart cannot express what
the site needs, and written like the cdk8s-rendered apps.

Renders are cached on disk, keyed on the vendored chart archive's digest, the values, the Kubernetes and API
versions, release, namespace, patches and this module's own code; misses render in parallel,
in the background while the caller composes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import marshal
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.cache import cache_dir, used
from sitegen.components.base import JsonPatch, ObjectPatch
from sitegen.components.ownership import WrittenField
from sitegen.compose import ownership, writer
from sitegen.compose.tools import HELM_VERSION, every_cpu, helm_binary
from sitegen.errors import SiteError
from sitegen.model import paths
from sitegen.model.kinds import CORE_CLUSTER_KINDS
from sitegen.tree import kube_yaml
from sitegen.tree.kube_yaml import KubeLoader


class HydrationError(SiteError):
    """A chart that fails to render, or a patch that no longer matches: one line."""


@dataclass(frozen=True)
class RenderJob:
    app: str
    release: str
    namespace: str
    archive: str
    archive_sha256: str
    values: dict[str, Any]
    kube_version: str
    api_versions: tuple[str, ...]  # group/versions the cluster serves beyond the built-in ones
    folder: str  # dist path of the app
    patches: tuple[ObjectPatch, ...] = ()
    include_crds: bool = True  # the chart's crds/ folder (a second release of a chart leaves it out)
    writes: tuple[WrittenField, ...] = ()  # fields the site's controllers write (ownership.py)

    @property
    def key(self) -> str:
        """The render's identity: the archive by its digest, not its path, so clones share renders."""
        fields = {k: v for k, v in asdict(self).items() if k != "archive"}
        payload = json.dumps({**fields, "code": _CODE, "helm": HELM_VERSION}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class RenderedObject:
    path: str  # in dist/
    text: str  # the file body, as the writer writes YAML
    api_version: str
    kind: str
    namespace: str
    name: str
    # the object as written, kept from the render (cached with it) so that no synth parses it again;
    # None for the CRDs kept verbatim
    body: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def document(self) -> dict[str, Any]:
        """The whole object (a CRD parsed from its text: costly, only for what needs its body)."""
        if self.body is not None:
            return self.body
        docs = [d for d in yaml.load_all(self.text, Loader=KubeLoader) if isinstance(d, dict)]
        return docs[0] if docs else self.metadata_document()

    def metadata_document(self) -> dict[str, Any]:
        """The object's identity as a document, for what reads only apiVersion, kind and namespace."""
        meta = {"name": self.name, **({"namespace": self.namespace} if self.namespace else {})}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}


@dataclass(frozen=True)
class Rendered:
    objects: tuple[RenderedObject, ...]
    serves: tuple[str, ...]  # group/versions of the CRDs the chart rendered


_CODE = hashlib.sha256(
    b"".join(Path(m.__file__).read_bytes() for m in (writer, kube_yaml, ownership))
    + Path(__file__).read_bytes()
).hexdigest()


# --- rendering -------------------------------------------------------------------------------------


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _apply(obj: dict[str, Any], op: JsonPatch) -> None:
    *parents, last = _pointer(op.path)
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if op.op == "test":  # RFC 6902: the patch stops unless the value is what it expects
        found = node[int(last)] if isinstance(node, list) else node.get(last)
        if found != op.value:
            raise ValueError(f"{op.path} is {found!r}, not {op.value!r}")
        return
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if op.op == "add":
            node.insert(index, op.value)
        elif op.op == "replace":
            node[index] = op.value
        else:
            del node[index]
    elif op.op in ("add", "replace"):
        node[last] = op.value
    else:
        del node[last]


def _patch(job: RenderJob, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for patch in job.patches:
        targets = [
            o for o in objects if o.get("kind") == patch.kind and o["metadata"].get("name") == patch.name
        ]
        if not targets:
            raise HydrationError(
                f"{job.app}: patch for {patch.kind} {patch.name} matches no object of the chart"
            )
        if patch.drop:
            objects = [o for o in objects if not any(o is t for t in targets)]
            continue
        if patch.copy_as is not None:
            targets = [copy.deepcopy(t) for t in targets]
            for obj in targets:
                obj["metadata"]["name"] = patch.copy_as
            objects += targets
        for obj in targets:
            for op in patch.ops:
                try:
                    _apply(obj, op)
                except (KeyError, IndexError, ValueError) as err:  # the chart changed under the patch
                    raise HydrationError(
                        f"{job.app}: patch for {patch.kind} {patch.name} ({op.op} {op.path}) no longer fits "
                        f"the chart: {err}"
                    ) from None
    return objects


def helm_arguments(job: RenderJob, values: Path) -> list[str]:
    """The `helm template` command line of a job, its values in the file `values`."""
    return [
        str(helm_binary()),
        "template",
        job.release,
        job.archive,
        "--namespace",
        job.namespace,
        "--values",
        str(values),
        "--kube-version",
        job.kube_version,
        *(["--include-crds"] if job.include_crds else []),
        "--skip-tests",
        *(f"--api-versions={v}" for v in job.api_versions),
    ]


def render(job: RenderJob) -> Rendered:
    """Run helm template for one app and lay out its objects (no cache)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as values:
        json.dump(job.values, values)
        values.flush()
        result = subprocess.run(
            helm_arguments(job, Path(values.name)), capture_output=True, text=True, check=False
        )
    if result.returncode != 0:
        message = " ".join(result.stderr.split())[:400]
        raise HydrationError(f"{job.app}: helm template failed: {message}")
    verbatim, objects = _split(job, result.stdout)
    crds = [o["spec"] for o in [*verbatim.values(), *objects] if o.get("kind") == "CustomResourceDefinition"]
    # A custom kind is namespaced unless its CRD, rendered by this chart, says Cluster: what the charts
    # of this site render of other charts' kinds (ServiceMonitor, Certificate, Issuer) is namespaced.
    cluster_kinds = {(c["group"], c["names"]["kind"]) for c in crds if c.get("scope") == "Cluster"}
    serves = {
        f"{c['group']}/{v['name']}" for c in crds for v in c.get("versions") or [] if v.get("served", True)
    }
    for obj in objects:
        key = (_group(obj.get("apiVersion", "")), obj.get("kind", ""))
        meta = obj.setdefault("metadata", {})
        if key in CORE_CLUSTER_KINDS or key in cluster_kinds:
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = job.namespace
    objects = ownership.finish(_patch(job, objects), job.writes)
    rendered: dict[str, RenderedObject] = {}
    laid_out = [(o, writer.yaml_text([o]), o) for o in objects] + [
        (head, ownership.keep_on_delete_text(text), None) for text, head in verbatim.items()
    ]
    for obj, text, body in laid_out:
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        path = str(PurePosixPath(job.folder) / paths.object_file(obj["kind"], meta["name"], namespace))
        if path in rendered:
            raise HydrationError(f"{job.app}: two objects {obj['kind']} {namespace}/{meta['name']}")
        rendered[path] = RenderedObject(
            path, text, obj["apiVersion"], obj["kind"], namespace, meta["name"], body
        )
    return Rendered(tuple(rendered[p] for p in sorted(rendered)), tuple(sorted(serves)))


_DOCUMENT_START = re.compile(r"^---[ \t]*$", re.M)
_SOURCE_COMMENT = re.compile(r"^# Source: .*(?:\n|\Z)", re.M)  # where Helm took each object from
_CRD_KIND = re.compile(r"^kind:[ \t]*CustomResourceDefinition[ \t]*$", re.M)
_SCHEMA_KEY = re.compile(r"^( *)(?:- )?schema:[ \t]*$")


def _without_schemas(text: str) -> str:
    """A block-style CRD without the `schema:` subtree of each version: what identifies it (name,
    group, kind, scope, served versions) in a fraction of the text."""
    kept, skip_deeper_than = [], -1
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if skip_deeper_than >= 0:
            if not line.strip() or indent > skip_deeper_than:
                continue
            skip_deeper_than = -1
        match = _SCHEMA_KEY.match(line)
        if match:
            item = line.lstrip().startswith("- ")
            skip_deeper_than = len(match[1]) + (2 if item else 0)
            if item:
                kept.append(match[1] + "-")  # the item goes on with its other keys
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def _split(job: RenderJob, stream: str) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Helm's output as (CRD text kept verbatim -> its identifying fields) and every other object
    parsed. CRDs are nine tenths of the bytes and need neither a namespace nor a patch here: parsing
    and re-writing them would cost more than rendering every chart."""
    patched_kinds = {p.kind for p in job.patches}
    verbatim: dict[str, dict[str, Any]] = {}
    objects: list[dict[str, Any]] = []
    for chunk in _DOCUMENT_START.split(stream):
        body = _SOURCE_COMMENT.sub("", chunk).strip("\n")
        if not body.strip():
            continue
        if _CRD_KIND.search(body) and "CustomResourceDefinition" not in patched_kinds:
            head = yaml.load(_without_schemas(body), Loader=KubeLoader)
            meta = head.get("metadata") if isinstance(head, dict) else None
            if isinstance(meta, dict) and meta.get("name") and not meta.get("namespace"):
                verbatim["---\n" + body.rstrip() + "\n"] = head
                continue
        objects += [d for d in yaml.load_all(body, Loader=KubeLoader) if isinstance(d, dict) and d]
    return verbatim, objects


def _cached(job: RenderJob) -> Path:
    # marshal: Python's own format for plain values, read back several times faster than JSON
    return cache_dir() / "renders" / f"{job.key}.marshal"


def _render_and_store(job: RenderJob) -> Rendered:
    rendered = render(job)
    target = _cached(job)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(marshal.dumps(([astuple(o) for o in rendered.objects], rendered.serves)))
    tmp.replace(target)
    return rendered


def _load(path: Path) -> Rendered:
    objects, serves = marshal.loads(path.read_bytes())
    used(path)
    return Rendered(tuple(RenderedObject(*o) for o in objects), tuple(serves))


Progress = Callable[[int, int, str], None]  # (done, total, app) as each render finishes


@contextmanager
def hydrating(
    jobs: list[RenderJob], workers: int | None = None, progress: Progress | None = None
) -> Iterator[Callable[[], dict[str, Rendered]]]:
    """Start every job's render at once: from the cache, the misses on every CPU in the background
    (largest chart first, so the workers finish together). The caller composes meanwhile and calls the
    yielded function for the renders by app folder, which waits for the misses."""
    out: dict[str, Rendered] = {}
    misses = []
    for job in jobs:
        try:  # absent, torn, or pruned by another process since: rendered again
            out[job.folder] = _load(_cached(job))
        except (OSError, EOFError, ValueError, TypeError):
            misses.append(job)
    if not misses:
        yield lambda: out
        return
    misses.sort(key=lambda j: -Path(j.archive).stat().st_size)
    pool = ProcessPoolExecutor(
        max_workers=min(workers or os.cpu_count() or 1, len(misses)), initializer=every_cpu
    )
    try:
        futures = {pool.submit(_render_and_store, job): job for job in misses}

        def wait() -> dict[str, Rendered]:
            for done, future in enumerate(as_completed(futures), 1):
                job = futures[future]
                out[job.folder] = future.result()
                if progress:
                    progress(done, len(misses), job.app)
            futures.clear()
            return out

        yield wait
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
