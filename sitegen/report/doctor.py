"""`sitegen doctor`: is this machine ready to synthesize and test? What is missing, and the command
that fixes it. Reads only local files (and runs the project's Node and Helm once each)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sitegen.compose.chart_supply import cached_archive, lock_path, read_lock, sha256
from sitegen.compose.tools import HELM_VERSION, PROJECT, chart_mirror, helm_binary
from sitegen.compose.variant import chart_keys
from sitegen.model import Site


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    blocking: bool = True  # a missing cache only costs time: synth fills it


def _version(command: list[str]) -> str | None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def checks(site: Site) -> list[Check]:
    out = [
        Check(
            "python",
            sys.version_info >= (3, 11),
            sys.version.split()[0],
            "install Python 3.11 or newer, then: make deps",
        )
    ]
    node = PROJECT / "node_modules" / ".bin" / "node"
    node_version = _version([str(node), "--version"]) if node.exists() else None
    out.append(Check("node (jsii runtime)", node_version is not None, node_version or "missing", "make deps"))
    cdk8s = PROJECT / "node_modules" / ".bin" / "cdk8s"
    out.append(Check("cdk8s CLI", cdk8s.exists(), "node_modules/.bin/cdk8s", "make deps"))
    helm = helm_binary()
    helm_version = _version([str(helm), "version", "--short"]) if helm.exists() else None
    out.append(
        Check(
            "helm",
            bool(helm_version and helm_version.startswith(HELM_VERSION)),
            helm_version or f"missing ({helm})",
            "make deps (or point $SITEGEN_HELM at a helm " + HELM_VERSION + ")",
        )
    )
    mirror = chart_mirror()
    if mirror is None:
        out.append(Check("chart mirror", True, "none: charts come from their upstream repositories"))
    else:
        out.append(
            Check(
                "chart mirror",
                (mirror / "index.yaml").is_file() or any(mirror.glob("*.tgz")),
                str(mirror),
                "point $SITEGEN_CHART_MIRROR at a directory of packaged charts, or unset it",
            )
        )
    lock = read_lock()
    out.append(Check("charts.lock", bool(lock), str(lock_path().relative_to(PROJECT)), "make charts-renew"))
    missing, changed = [], []
    needed = chart_keys(site, list(site.variants))
    for key, pin in sorted((k, site.versions.charts[k]) for k in needed):
        archive = cached_archive(key, pin)
        if not archive.is_file():
            missing.append(key)
        elif key in lock and sha256(archive) != lock[key].sha256 and lock[key].source != _source(archive):
            continue  # another source: synth compares the files
        elif key in lock and sha256(archive) != lock[key].sha256:
            changed.append(key)
    detail = f"{len(site.versions.charts) - len(missing)} of {len(site.versions.charts)} cached" + (
        f"; not yet: {', '.join(missing[:4])}{'...' if len(missing) > 4 else ''}" if missing else ""
    )
    out.append(
        Check("chart cache", not missing, detail, "make charts (synth fetches them too)", blocking=False)
    )
    if changed:
        out.append(
            Check(
                "chart archives",
                False,
                f"differ from charts.lock: {', '.join(changed)}",
                "make charts-renew, on purpose",
            )
        )
    return out


def _source(archive: Path) -> str:
    source = archive.with_suffix(".source")
    return source.read_text().strip() if source.is_file() else ""


def render(results: list[Check]) -> str:
    width = max(len(c.name) for c in results)
    lines = []
    for c in results:
        mark = "ok " if c.ok else "!! " if c.blocking else "-- "
        line = f"{mark}{c.name:<{width}}  {c.detail}"
        lines.append(line if c.ok else f"{line}\n   {'':<{width}}  fix: {c.fix}")
    bad = sum(not c.ok and c.blocking for c in results)
    lines.append("ready: make synth, make test" if not bad else f"{bad} to fix before make synth")
    return "\n".join(lines) + "\n"
