"""Vendored charts: every chart archive the site renders is committed under `vendor/charts/`, and
`charts.lock` holds, per versions.yaml key, its chart, version, the sha256 of the archive and where it
came from.

synth, validate and the tests read only the vendored archives and refuse one that differs from its
lock entry: the two set-up commands need nothing beside the checkout and no network. A chart source (a
mirror directory, or the chart's upstream repository over HTTP or OCI through Helm) is read only by
`sitegen charts --renew`, which writes the archive and its lock entry together, for a chart added or
bumped on purpose (Renovate's post-upgrade step runs it; see docs/dist.md).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from sitegen.compose.tools import PROJECT, helm_binary
from sitegen.errors import SiteError
from sitegen.model import ChartPin
from sitegen.tree.fields import dig

_HEADER = """\
# The vendored chart archives (vendor/charts/<chart>-<version>.tgz), by config/versions.yaml key: chart,
# version, the sha256 of the archive and where it came from. synth refuses an archive that differs;
# `sitegen charts --renew KEY` (make charts-renew) replaces an archive and its entry together.
"""


class ChartFault(SiteError):
    """A chart that is not vendored, does not match the lock, or cannot be had: printed as one line."""


@dataclass(frozen=True)
class Locked:
    chart: str
    version: str
    sha256: str
    origin: str  # where the archive came from: a repository, or the source tag it was rebuilt from


@dataclass(frozen=True)
class Archive:
    path: Path
    sha256: str


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def shown(path: Path) -> str:
    """A path as messages print it: relative to the project when inside it."""
    return str(path.relative_to(PROJECT)) if path.is_relative_to(PROJECT) else str(path)


def archive_name(chart: str, version: str) -> str:
    return f"{chart}-{version}.tgz"


@dataclass(frozen=True)
class ChartStore:
    """The vendored archives and their lock (the project's own unless a test points elsewhere)."""

    folder: Path = PROJECT / "vendor" / "charts"
    lock: Path = PROJECT / "charts.lock"

    def read_lock(self) -> dict[str, Locked]:
        if not self.lock.is_file():
            return {}
        data = yaml.safe_load(self.lock.read_text()) or {}
        return {key: Locked(**entry) for key, entry in (data.get("charts") or {}).items()}

    def write_lock(self, entries: Mapping[str, Locked]) -> None:
        body = {
            key: {"chart": e.chart, "version": e.version, "sha256": e.sha256, "origin": e.origin}
            for key, e in sorted(entries.items())
        }
        self.lock.write_text(_HEADER + yaml.safe_dump({"charts": body}, sort_keys=False, width=120))

    def path(self, entry: Locked | ChartPin) -> Path:
        return self.folder / archive_name(entry.chart, entry.version)

    def supply(self, charts: Mapping[str, ChartPin]) -> dict[str, Archive]:
        """Every pinned chart's vendored archive, checked against the lock."""
        lock = self.read_lock()
        return {key: self._checked(key, pin, lock.get(key)) for key, pin in sorted(charts.items())}

    def _checked(self, key: str, pin: ChartPin, locked: Locked | None) -> Archive:
        renew = f"run `sitegen charts --renew {key}` (make charts-renew) if the change is intended"
        if locked is None:
            raise ChartFault(f"{shown(self.lock)}: {key}: {pin.chart} {pin.version} is not vendored; {renew}")
        if (locked.chart, locked.version) != (pin.chart, pin.version):
            raise ChartFault(
                f"{shown(self.lock)}: {key}: vendors {locked.chart} {locked.version}, config/versions.yaml "
                f"pins {pin.chart} {pin.version}; {renew}"
            )
        path = self.path(pin)
        if not path.is_file():
            raise ChartFault(f"{shown(path)}: missing, locked for {key}; restore it from git or {renew}")
        digest = sha256(path)
        if digest != locked.sha256:
            raise ChartFault(
                f"{shown(path)}: sha256 {digest[:12]}..., {shown(self.lock)} holds "
                f"{locked.sha256[:12]}... for {key}; {renew}"
            )
        return Archive(path, digest)

    def strays(self) -> list[Path]:
        """Archives in the folder that no lock entry names."""
        named = {archive_name(e.chart, e.version) for e in self.read_lock().values()}
        return sorted(p for p in self.folder.glob("*.tgz") if p.name not in named)

    def outdated(self, charts: Mapping[str, ChartPin]) -> list[str]:
        """The keys whose vendored archive is not the pinned one (a bump, a new chart), and the lock
        entries no pin uses any more."""
        lock = self.read_lock()
        changed = [
            key
            for key, pin in charts.items()
            if key not in lock or (lock[key].chart, lock[key].version) != (pin.chart, pin.version)
        ]
        return sorted([*changed, *(key for key in lock if key not in charts)])

    def renew(
        self, charts: Mapping[str, ChartPin], keys: Iterable[str], mirror: Path | None, origin: str | None
    ) -> list[str]:
        """Fetch each key's pinned archive (from `mirror` only, when given; else from upstream), vendor
        it and lock it; entries of charts no longer pinned go, with every archive nothing locks."""
        lock = {key: entry for key, entry in self.read_lock().items() if key in charts}
        self.folder.mkdir(parents=True, exist_ok=True)
        renewed = []
        for key in sorted(set(keys)):
            pin = charts[key]
            with tempfile.TemporaryDirectory() as tmp:
                fetched, where = _fetch(pin, mirror, Path(tmp))
                shutil.copyfile(fetched, self.path(pin))
            lock[key] = Locked(pin.chart, pin.version, sha256(self.path(pin)), origin or where)
            renewed.append(key)
        self.write_lock(lock)
        for stray in self.strays():
            stray.unlink()
        return renewed


def _fetch(pin: ChartPin, mirror: Path | None, tmp: Path) -> tuple[Path, str]:
    """The pinned archive, and where it came from."""
    if mirror is not None:
        found = _from_mirror(mirror, pin)
        if found is None:
            raise ChartFault(
                f"chart {pin.chart} {pin.version}: not in the mirror {mirror} "
                f"(no index.yaml entry or {archive_name(pin.chart, pin.version)})"
            )
        return found, f"chart mirror (upstream {pin.repo})"
    error = _from_upstream(pin, tmp)
    if error is not None:
        raise ChartFault(f"chart {pin.chart} {pin.version}: not found at {pin.repo}: {error}")
    (pulled,) = tmp.glob("*.tgz")
    return pulled, f"published at {pin.repo}"


def _from_mirror(mirror: Path, pin: ChartPin) -> Path | None:
    """A mirror is a Helm repository folder: its index.yaml names the file, else the usual file name."""
    index = mirror / "index.yaml"
    if index.is_file():
        entries = dig(yaml.safe_load(index.read_text()), "entries") or {}
        for entry in entries.get(pin.chart) or []:
            if str(entry.get("version")) == pin.version and entry.get("urls"):
                candidate = mirror / entry["urls"][0]
                if candidate.is_file():
                    return candidate
    candidate = mirror / archive_name(pin.chart, pin.version)
    return candidate if candidate.is_file() else None


def _from_upstream(pin: ChartPin, target: Path) -> str | None:
    """Pull through Helm into `target`; the error Helm gives, or None."""
    reference = [f"{pin.repo.rstrip('/')}/{pin.chart}"] if pin.is_oci else [pin.chart, "--repo", pin.repo]
    result = subprocess.run(
        [str(helm_binary()), "pull", *reference, "--version", pin.version, "--destination", str(target)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0 or not any(target.glob("*.tgz")):
        return (result.stderr.strip().splitlines() or ["no archive"])[-1]
    return None
