"""dist/ read back as documents, each knowing its variant, area and cluster."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.compose import paths

# libyaml when present: the CRD files alone are megabytes of YAML
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Document:
    file: PurePosixPath  # relative to the dist root
    index: int  # position in a multi-document file
    body: dict[str, Any]

    @property
    def variant(self) -> str:
        return self.file.parts[0]

    @property
    def area(self) -> str:
        return self.file.parts[1] if len(self.file.parts) > 2 else ""

    @property
    def cluster(self) -> str | None:
        parts = self.file.parts
        return parts[2] if self.area in paths.CLUSTER_AREAS and len(parts) > 3 else None

    @property
    def is_host_file(self) -> bool:
        """Placed on a host at bootstrap (kubeadm configs, static pods), never scheduled or synced."""
        return self.area == paths.KUBEADM

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


def load_tree(dist: Path) -> list[Document]:
    docs = []
    for path in sorted(dist.rglob("*.yaml")):
        rel = PurePosixPath(path.relative_to(dist).as_posix())
        for index, body in enumerate(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER)):
            if body is not None:
                docs.append(Document(rel, index, body if isinstance(body, dict) else {"_": body}))
    return docs
