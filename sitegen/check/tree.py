"""dist/ read back as documents, each knowing its variant, area and cluster."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.compose.kube_yaml import KubeLoader
from sitegen.compose.tools import stored
from sitegen.model import paths


@dataclass(frozen=True)
class Document:
    file: PurePosixPath  # relative to the dist root
    index: int  # position in a multi-document file
    body: dict[str, Any]
    digest: bytes = field(default=b"", compare=False)  # of the file's bytes: a key for memoized checks

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
        return self.is_host_file and set(self.body) == {"_"} and isinstance(self.body["_"], list)

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
        return str((self.body.get("metadata") or {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name", ""))

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


def load_tree(dist: Path) -> list[Document]:
    docs = []
    for path in sorted(dist.rglob("*.yaml")):
        rel = PurePosixPath(path.relative_to(dist).as_posix())
        digest, bodies = parse_documents(path.read_bytes())
        for index, body in enumerate(bodies):
            if body is not None:
                docs.append(Document(rel, index, body if isinstance(body, dict) else {"_": body}, digest))
    return docs
