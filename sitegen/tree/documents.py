"""dist/ read back as documents, each knowing its variant, area, cluster and app: the one reader of its
YAML files (validate, the bring-up, diff, synth's checks of what it would change, the reports)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.cache import stored
from sitegen.model import paths
from sitegen.tree.fields import dig
from sitegen.tree.kube_yaml import KubeLoader


@dataclass(frozen=True)
class Document:
    file: PurePosixPath  # relative to the dist root
    index: int  # position in a multi-document file
    body: dict[str, Any]
    digest: bytes = field(default=b"", compare=False)  # of the file's bytes: a key for memoized checks
    wrapped: bool = field(default=False, compare=False)  # no mapping (a kubeadm patch list): body {"_": it}

    @property
    def variant(self) -> str:
        return paths.DistPath(self.file).variant

    @property
    def area(self) -> str:
        return paths.DistPath(self.file).area

    @property
    def cluster(self) -> str | None:
        return paths.DistPath(self.file).cluster

    @property
    def app(self) -> str | None:
        """The app folder that holds it (an object of an Application)."""
        return paths.DistPath(self.file).app

    @property
    def is_host_file(self) -> bool:
        """Placed on a host at bootstrap (kubeadm configs, static pods), never scheduled or synced."""
        return self.area == paths.KUBEADM

    @property
    def is_kubeadm_patch(self) -> bool:
        """A host file holding a JSON patch kubeadm applies to a static pod (a list, not an object)."""
        return self.is_host_file and self.wrapped and isinstance(self.body["_"], list)

    @property
    def is_values(self) -> bool:
        return self.area == paths.VALUES

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def namespace(self) -> str:
        return str(dig(self.body, "metadata", "namespace", default=""))

    @property
    def name(self) -> str:
        return str(dig(self.body, "metadata", "name", default=""))

    @property
    def ref(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}".strip()


# Parsed bodies by file digest, for the life of the process: a hydrated tree is ~45 MB of YAML, and
# tests validate many copies that differ in a file or two. Checks treat bodies as read-only.
_PARSED: dict[bytes, tuple[Any, ...]] = {}


def parse_documents(data: bytes) -> tuple[bytes, tuple[Any, ...]]:
    """A YAML file's documents as Kubernetes reads them, and its digest. Parsed once per process and
    kept for the next one in the git-ignored cache, by digest: validate, bringup and the tests read the
    same tree, and loading it back costs a tenth of parsing it."""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    if digest not in _PARSED:
        _PARSED[digest] = stored(
            "parsed", digest.hex(), lambda: tuple(yaml.load_all(data.decode("utf-8"), Loader=KubeLoader))
        )
    return digest, _PARSED[digest]


def documents(file: PurePosixPath, data: bytes) -> list[Document]:
    """A dist/ file's documents (`file` relative to dist/); empty ones are left out."""
    digest, bodies = parse_documents(data)
    return [
        Document(file, index, body, digest)
        if isinstance(body, dict)
        else Document(file, index, {"_": body}, digest, True)
        for index, body in enumerate(bodies)
        if body is not None
    ]


def load_tree(dist: Path) -> list[Document]:
    return [
        doc
        for path in sorted(dist.rglob("*.yaml"))
        for doc in documents(PurePosixPath(path.relative_to(dist).as_posix()), path.read_bytes())
    ]
