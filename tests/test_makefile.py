"""`make help` lists every target a person runs, each with its line."""

from __future__ import annotations

import re
import subprocess

from .conftest import REPO


def test_make_help_names_every_phony_target():
    makefile = (REPO / "Makefile").read_text()
    (phony,) = re.findall(r"^\.PHONY: (.+)$", makefile, re.M)
    shown = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True, check=True
    )
    listed = {line.split()[1]: line for line in shown.stdout.splitlines()}
    assert sorted(listed) == sorted(phony.split())
    assert all(len(line.split(None, 2)) == 3 for line in listed.values())  # each with its description
