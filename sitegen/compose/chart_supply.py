"""Chart supply with integrity: every pinned chart archive in a git-ignored cache, checked against the
committed lock (`charts.lock`: name, version, where it came from, sha256 of the archive).

An archive comes from a mirror directory (an air-gapped site's copy of the repositories: `index.yaml`
or `<chart>-<version>.tgz`) or, when no mirror holds it, from the chart's upstream repository (HTTP or
OCI, through Helm). A changed archive stops synth until the lock is renewed on purpose
(`sitegen charts --renew`); a chart that cannot be had is one line naming chart, version and places.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from sitegen.compose.tools import PROJECT, cache_dir, chart_mirror, helm_binary
from sitegen.model import ChartPin

MIRROR = "mirror"  # the lock's `source` for an archive taken from a mirror directory


class ChartFault(Exception):
    """A chart that cannot be had or does not match the lock: printed as one line."""


@dataclass(frozen=True)
class Locked:
    chart: str
    version: str
    source: str  # MIRROR, or the upstream repository
    sha256: str  # of the archive: what a chart from the same source must match
    content: str  # of the files inside: what the same chart from another source must match


def lock_path() -> Path:
    """charts.lock at the project root ($SITEGEN_CHARTS_LOCK moves it, for tests that renew it)."""
    return Path(os.environ.get("SITEGEN_CHARTS_LOCK") or PROJECT / "charts.lock")


def read_lock() -> dict[str, Locked]:
    path = lock_path()
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return {key: Locked(**{"content": "", **entry}) for key, entry in (data.get("charts") or {}).items()}


def write_lock(entries: Mapping[str, Locked]) -> None:
    body = {
        key: {
            "chart": e.chart,
            "version": e.version,
            "source": e.source,
            "sha256": e.sha256,
            "content": e.content,
        }
        for key, e in sorted(entries.items())
    }
    header = (
        "# The pinned chart archives, by versions.yaml key: where each came from, the sha256 of the archive\n"
        "# and of its files (name and bytes, in name order). An archive from the same source must match the\n"
        "# first; one from another source (a mirror's rebuild of an upstream release) the second. synth\n"
        "# refuses anything else; `sitegen charts --renew` rewrites this file on purpose.\n"
    )
    lock_path().write_text(header + yaml.safe_dump({"charts": body}, sort_keys=False))


def content_sha256(path: Path) -> str:
    """The digest of a chart's files, independent of how the archive was packed (order, timestamps)."""
    digest = hashlib.sha256()
    with tarfile.open(path) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for member in members:
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            digest.update(f"{member.name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_archive(key: str, pin: ChartPin) -> Path:
    return cache_dir() / "charts" / f"{key}-{pin.version}.tgz"


def _from_mirror(mirror: Path, pin: ChartPin) -> Path | None:
    index = mirror / "index.yaml"
    if index.is_file():
        entries = (yaml.safe_load(index.read_text()) or {}).get("entries") or {}
        for entry in entries.get(pin.chart) or []:
            if str(entry.get("version")) == pin.version and entry.get("urls"):
                candidate = mirror / entry["urls"][0]
                if candidate.is_file():
                    return candidate
    candidate = mirror / f"{pin.chart}-{pin.version}.tgz"
    return candidate if candidate.is_file() else None


def _from_upstream(pin: ChartPin, target: Path) -> str | None:
    """Pull through Helm; the error Helm gives, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        reference = [f"{pin.repo.rstrip('/')}/{pin.chart}"] if pin.is_oci else [pin.chart, "--repo", pin.repo]
        result = subprocess.run(
            [str(helm_binary()), "pull", *reference, "--version", pin.version, "--destination", tmp],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        pulled = sorted(Path(tmp).glob("*.tgz"))
        if result.returncode != 0 or not pulled:
            return (result.stderr.strip().splitlines() or ["no archive"])[-1]
        shutil.move(pulled[0], target)
    return None


def fetch(key: str, pin: ChartPin) -> tuple[Path, str]:
    """The archive in the cache and where it came from; fetched if missing."""
    target = cached_archive(key, pin)
    source_file = target.with_suffix(".source")
    if target.is_file() and source_file.is_file():
        return target, source_file.read_text().strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    mirror = chart_mirror()
    looked = []
    if mirror is not None:
        found = _from_mirror(mirror, pin)
        if found is not None:
            shutil.copyfile(found, target)
            source_file.write_text(MIRROR)
            return target, MIRROR
        looked.append(f"mirror {mirror}")
    error = _from_upstream(pin, target)
    if error is None:
        source_file.write_text(pin.repo)
        return target, pin.repo
    looked.append(f"{pin.repo} ({error})")
    raise ChartFault(f"chart {pin.chart} {pin.version} ({key}) not found: looked in {'; '.join(looked)}")


@dataclass(frozen=True)
class Archive:
    path: Path
    sha256: str


def supply(charts: Mapping[str, ChartPin], *, renew: bool = False) -> dict[str, Archive]:
    """Every chart in the cache and matching the lock (or, with `renew`, the lock rewritten)."""
    lock = read_lock()
    archives: dict[str, Archive] = {}
    renewed = dict(lock)
    for key, pin in sorted(charts.items()):
        path, source = fetch(key, pin)
        digest = sha256(path)
        if renew:
            renewed[key] = Locked(pin.chart, pin.version, source, digest, content_sha256(path))
        else:
            _check(key, Locked(pin.chart, pin.version, source, digest, ""), path, lock.get(key))
        archives[key] = Archive(path, digest)
    if renew:
        write_lock({k: v for k, v in renewed.items() if k in charts})
    return archives


def _check(key: str, got: Locked, path: Path, locked: Locked | None) -> None:
    renew = "renew it with `sitegen charts --renew` if the change is intended"
    if locked is None:
        raise ChartFault(f"charts.lock: {key}: {got.chart} {got.version} is not locked; {renew}")
    if (locked.chart, locked.version) != (got.chart, got.version):
        raise ChartFault(
            f"charts.lock: {key}: locks {locked.chart} {locked.version}, versions.yaml pins "
            f"{got.chart} {got.version}; {renew}"
        )
    if locked.sha256 == got.sha256:
        return
    if locked.source != got.source:
        content = content_sha256(path)
        if content == locked.content:
            return
        raise ChartFault(
            f"charts.lock: {key}: files of {got.chart} {got.version} from {got.source} have sha256 "
            f"{content[:12]}..., the lock's (from {locked.source}) {locked.content[:12]}...; {renew}"
        )
    raise ChartFault(
        f"charts.lock: {key}: archive of {got.chart} {got.version} from {got.source} has sha256 "
        f"{got.sha256[:12]}..., the lock {locked.sha256[:12]}... (from {locked.source}); {renew}"
    )
