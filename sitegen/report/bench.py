"""Synth benchmark (`make bench`): wall time of the phases, best and median of several runs.

Not a test: numbers depend on the machine. Run it before and after a heavy change and compare.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sitegen.compose.variant import synthesize
from sitegen.compose.writer import write_dist
from sitegen.model import load_site


def _timed(runs: int, action: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def main(runs: int = 5) -> None:
    config = Path("config")
    site = load_site(config)
    variants = list(site.variants)
    files = synthesize(site, variants)
    with tempfile.TemporaryDirectory() as tmp:
        phases = {
            "load config/": _timed(runs, lambda: load_site(config)),
            "synthesize (jsii, in process)": _timed(runs, lambda: synthesize(site, variants)),
            "write dist/": _timed(runs, lambda: write_dist(files, Path(tmp) / "dist", variants)),
            "sitegen synth (new process)": _timed(
                runs,
                lambda: subprocess.run(
                    [str(Path(sys.executable).parent / "sitegen"), "synth", "--out", str(Path(tmp) / "cli")],
                    check=True,
                    capture_output=True,
                ),
            ),
        }
    print(f"{len(files)} files, {runs} runs each")
    for name, times in phases.items():
        print(f"{name:32} best {min(times):6.3f} s   median {statistics.median(times):6.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
