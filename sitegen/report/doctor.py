"""`sitegen doctor`: is this machine ready to synthesize and test? What is missing, and the command
that fixes it. Reads only local files (and runs the project's Node and Helm once each)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from sitegen.compose.chart_supply import ChartFault, ChartStore
from sitegen.compose.tools import HELM_VERSION, PROJECT, helm_binary
from sitegen.compose.variant import chart_keys
from sitegen.model import Site


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


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
    pins = site.versions.chart_pins(chart_keys(site, list(site.variants)))
    try:
        ChartStore().supply(pins)
        out.append(
            Check("vendored charts", True, f"{len(pins)} in vendor/charts/, as charts.lock holds them")
        )
    except ChartFault as fault:
        out.append(Check("vendored charts", False, str(fault), "git checkout -- vendor/charts charts.lock"))
    return out


def render(results: list[Check]) -> str:
    width = max(len(c.name) for c in results)
    lines = []
    for c in results:
        mark = "ok " if c.ok else "!! "
        line = f"{mark}{c.name:<{width}}  {c.detail}"
        lines.append(line if c.ok else f"{line}\n   {'':<{width}}  fix: {c.fix}")
    bad = sum(not c.ok for c in results)
    lines.append("ready: make synth, make test" if not bad else f"{bad} to fix before make synth")
    return "\n".join(lines) + "\n"
