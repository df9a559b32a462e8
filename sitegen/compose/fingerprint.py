"""The whole synth as one cached step: when nothing it reads has changed and the output still holds
what the last synth wrote, there is nothing to do.

What synth reads: the config folder, the generator's code (sitegen/, constructs/, imports/, main.py),
the vendored chart archives, the locks that pin its libraries, Node packages and charts, and the variants asked for. The cache
keeps, per fingerprint of those, the digest of every file written; a tree edited by hand, or any
changed input, takes the full path. Deliberately light: no model, no cdk8s, no Helm is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

from sitegen.compose.tools import HELM_VERSION, PROJECT, cache_dir
from sitegen.compose.writer import present_files

_CODE_FOLDERS = ("sitegen", "constructs", "imports")
_LOCKS = ("main.py", "charts.lock", "requirements.lock", "package-lock.json", "cdk8s.yaml")


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def fingerprint(config: Path, variants: list[str] | None) -> str:
    digest = hashlib.blake2b(digest_size=20)
    digest.update(json.dumps([HELM_VERSION, variants]).encode())
    inputs = [(config, p) for p in _files(config, "*")]
    inputs += [(PROJECT, p) for folder in _CODE_FOLDERS for p in _files(PROJECT / folder, "*.py")]
    inputs += [(PROJECT, p) for p in _files(PROJECT / "vendor" / "charts", "*.tgz")]
    inputs += [(PROJECT, PROJECT / name) for name in _LOCKS if (PROJECT / name).is_file()]
    for root, path in inputs:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _record(key: str) -> Path:
    return cache_dir() / "synth" / f"{key}.json"


def remember(key: str, out: Path, written: dict[str, bytes]) -> None:
    """Keep the digests of what this synth wrote under `out`, by the fingerprint of its inputs."""
    record = _record(key)
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(
        json.dumps({"out": str(out.resolve()), "files": {p: _digest(d) for p, d in written.items()}})
    )
    tmp.replace(record)


def unchanged(key: str, out: Path, variants: list[str] | None) -> int | None:
    """The number of files, if `out` still holds exactly what a synth of the same inputs wrote there."""
    record = _record(key)
    if not record.is_file():
        return None
    data = json.loads(record.read_text())
    if data.get("out") != str(out.resolve()):
        return None
    files: dict[str, str] = data["files"]
    if present_files(out, variants) != {PurePosixPath(p) for p in files}:
        return None
    if any(_digest((out / path).read_bytes()) != digest for path, digest in files.items()):
        return None
    return len(files)
