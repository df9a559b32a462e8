"""The RUNBOOK's wait for Jobs that may fail (`jobs_done`), run by bash against a kubectl that answers
as the API server would for Jobs that completed, failed or still run: a failed Job ends the wait at
once, naming it (kubectl wait takes one condition: waiting for Complete alone sat out four hours)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from sitegen.tree.runbook import JOBS_DONE_FUNCTION

from .conftest import DIST

# kubectl wait --for=condition=<c> ... job/a job/b: succeeds when every Job named has condition c
KUBECTL = """#!/bin/sh
want=""; jobs=""
for a; do
  case "$a" in
    --for=condition=complete) want=complete ;;
    --for=condition=failed) want=failed ;;
    job/*) jobs="$jobs ${a#job/}" ;;
  esac
done
for j in $jobs; do
  case " $(eval echo \\$$(echo "$want" | tr a-z A-Z)) " in *" $j "*) ;; *) exit 1 ;; esac
done
exit 0
"""


def _run(tmp_path: Path, call: str, complete: str = "", failed: str = "") -> subprocess.CompletedProcess[str]:
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(KUBECTL)
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "COMPLETE": complete, "FAILED": failed}
    script = f"{JOBS_DONE_FUNCTION}\n{call}\n"
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_every_job_complete_is_done(tmp_path):
    result = _run(tmp_path, "jobs_done gpu-health 60 job/a job/b", complete="a b")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_failed_job_ends_the_wait_at_once_and_is_named(tmp_path):
    result = _run(tmp_path, "jobs_done gpu-health 14400 job/a job/b", complete="a", failed="b")
    assert result.returncode == 1 and "job/b failed: kubectl -n gpu-health logs job/b" in result.stdout


def test_jobs_still_running_past_the_deadline_fail_the_wait(tmp_path):
    result = _run(tmp_path, "jobs_done gpu-health 0 job/a job/b", complete="a")
    assert result.returncode == 1 and "not done in 0 s: job/a job/b" in result.stdout


def test_the_runbooks_burn_in_waits_through_it():
    """Day 1 and a rebuilt node: every wait on a burn-in or pair Job goes through jobs_done."""
    for runbook in sorted(DIST.glob("*/bootstrap/RUNBOOK.md")):
        text = runbook.read_text()
        assert "wait --for=condition=complete --timeout=4h" not in text, runbook
        assert text.count("jobs_done gpu-health 14400 job/burn-in-") >= 2, runbook  # day 1 and a rebuild
