"""The cdk8s charts a variant is built from, each laid out into its own folder of dist/.

An ObjectChart is exactly one Argo CD Application (one folder, one file per object); the bootstrap chart
holds what the root Application syncs; a HostFilesChart holds the files a human places on hosts. No
chart depends on another, so nothing relies on cdk8s's own file naming.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

from cdk8s import Chart

from constructs import Construct
from constructs.host_file import HostFile
from constructs.objects import with_bodies
from sitegen.compose.ownership import ALL_WRITES, finish
from sitegen.compose.writer import OutputFile
from sitegen.model import paths


class ObjectChart(Chart):
    """A chart written as one file per object into `folder`: `<namespace>.<kind>.<name>.yaml`."""

    def __init__(self, scope: Construct, id: str, *, folder: PurePosixPath) -> None:
        super().__init__(scope, id, disable_resource_name_hashes=True)
        self.folder = folder

    @cached_property
    def documents(self) -> list[dict[str, Any]]:
        return finish(with_bodies(self.to_json(), self.node.find_all()), ALL_WRITES)

    def synthesize(self) -> None:
        """Take the objects from cdk8s now (one jsii call for the chart), not when they are first read."""
        _ = self.documents

    def output_files(self) -> list[OutputFile]:
        files = []
        for doc in self.documents:
            meta = doc["metadata"]
            name = paths.object_file(doc["kind"], meta["name"], meta.get("namespace", ""))
            files.append(OutputFile(self.folder / name, [doc]))
        return files


class HostFilesChart(Chart):
    """Files placed on hosts by the bootstrap runbook, each a multi-document YAML with a header."""

    def __init__(self, scope: Construct, id: str, *, folder: PurePosixPath) -> None:
        super().__init__(scope, id, disable_resource_name_hashes=True)
        self.folder = folder

    def output_files(self) -> list[OutputFile]:
        host_files = [c for c in self.node.find_all() if isinstance(c, HostFile)]
        return [OutputFile(self.folder / f.file_name, f.documents(), f.header) for f in host_files]
