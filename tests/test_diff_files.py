"""sitegen diff over files that are no objects (host scripts, values): named within their variant, so
a change made alike in several variants is listed once, and counted as files, not apps."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sitegen.report.diff import compare
from sitegen.report.diff_render import render_text


def _commit(repo: Path, message: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)


def _scripts(repo: Path, text: str) -> None:
    for variant in ("one-cluster", "two-cluster"):
        path = repo / f"dist/{variant}/kubeadm/ai/host-prep-gpu.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_file_changed_alike_in_two_variants_is_listed_once(tmp_path):
    """A host script changed the same way in both variants reads alike (named within its variant) and
    is listed once, under both; the summary tells apps from files."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _scripts(tmp_path, "set -eu\necho baseline\n")
    _commit(tmp_path, "scripts")
    _scripts(tmp_path, "set -eu\necho baseline 2\n")
    _commit(tmp_path, "scripts changed")
    text = render_text(compare(tmp_path, "HEAD~1", "HEAD"))
    assert text.count("~ kubeadm/ai/host-prep-gpu.sh") == 1, text
    assert "one-cluster, two-cluster ai kubeadm/host-prep-gpu.sh: +0 -0 ~1" in text
    assert text.rstrip().endswith("0 added, 0 removed, 2 changed in 2 files")
