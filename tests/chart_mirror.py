"""A local Helm repository holding a vendored chart re-packed under another version: a bump offline."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import yaml


def mirror_with(tmp_path: Path, archive: Path, version: str) -> Path:
    """A Helm repository folder holding `archive`'s chart re-packed as `version` (its Chart.yaml too)."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    chart = yaml.safe_load(chart_member(archive, "Chart.yaml"))
    name = chart["name"]
    target = mirror / f"{name}-{version}.tgz"
    with tarfile.open(archive) as src, tarfile.open(target, "w:gz") as out:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if member.name == f"{name}/Chart.yaml":
                data = yaml.safe_dump({**chart, "version": version}).encode()
                member.size = len(data)
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    index = {
        "apiVersion": "v1",
        "entries": {name: [{"name": name, "version": version, "urls": [target.name]}]},
    }
    (mirror / "index.yaml").write_text(yaml.safe_dump(index))
    return mirror


def chart_member(archive: Path, suffix: str) -> bytes:
    with tarfile.open(archive) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith(suffix)]
        return tar.extractfile(member).read()  # type: ignore[union-attr]
