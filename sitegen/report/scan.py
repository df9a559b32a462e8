"""A recognised scanner over the hydrated output: checkov's Kubernetes checks on every object of dist/,
judged against a reviewed exceptions file.

Every failed check must be excepted by an entry that names the check, the objects it may fail on
(patterns over `<cluster>/<app>/<Kind>.<namespace>.<name>`) and why; a finding no entry covers fails,
and so does an entry that no longer covers any finding (a stale exception hides the next regression).
checkov runs with `--skip-download`: nothing is fetched.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.compose import paths


class ScanError(Exception):
    """The scanner could not run or its output is not what this module reads."""


@dataclass(frozen=True)
class Finding:
    check: str
    title: str
    variant: str
    subject: str  # <cluster>/<app>/<Kind>.<namespace>.<name>; <cluster>/kubeadm/...; bootstrap/...

    def __str__(self) -> str:
        return f"{self.check} {self.variant}/{self.subject}: {self.title}"


@dataclass(frozen=True)
class Exception_:
    check: str
    where: tuple[str, ...]
    reason: str

    def covers(self, finding: Finding) -> bool:
        return finding.check == self.check and any(
            fnmatch.fnmatchcase(finding.subject, w) for w in self.where
        )


@dataclass(frozen=True)
class Verdict:
    passed: int
    failed: int
    new: list[Finding]
    stale: list[Exception_]
    excepted: dict[str, int]  # check -> findings excepted

    @property
    def ok(self) -> bool:
        return not self.new and not self.stale


def load_exceptions(path: Path) -> list[Exception_]:
    entries = yaml.safe_load(path.read_text()) or []
    found = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"check", "where", "reason"} or not entry["reason"]:
            raise ScanError(f"{path}: entry {i}: needs exactly check, where and a reason")
        found.append(Exception_(str(entry["check"]), tuple(entry["where"]), str(entry["reason"])))
    return found


def _subject(file_path: str, resource: str) -> tuple[str, str]:
    rel = PurePosixPath(file_path.lstrip("/"))
    variant, area, *rest = rel.parts
    if area == paths.APPS:
        return variant, f"{rest[0]}/{rest[1]}/{resource}"
    if area == paths.KUBEADM:  # host files: static pods
        return variant, f"{rest[0]}/{area}/{resource}"
    return variant, f"{area}/{resource}"


def findings_of(report: Any) -> tuple[int, int, list[Finding]]:
    """(passed, failed, findings) of checkov's JSON report (one framework: an object, or a list)."""
    reports = report if isinstance(report, list) else [report]
    passed = failed = 0
    found = []
    for part in reports:
        if part.get("check_type") not in (None, "kubernetes"):
            continue
        summary = part.get("summary") or {}
        passed += int(summary.get("passed", 0))
        failed += int(summary.get("failed", 0))
        for item in (part.get("results") or {}).get("failed_checks") or []:
            variant, subject = _subject(item["file_path"], item["resource"])
            found.append(Finding(item["check_id"], item["check_name"], variant, subject))
    return passed, failed, sorted(set(found), key=str)


def run_checkov(checkov: Path, dist: Path) -> list[Any]:
    """checkov over every YAML object of dist/ (host files and values are not Kubernetes objects), one
    process per variant side by side. CustomResourceDefinitions are skipped: checkov has no check for
    them, and parsing them is most of its time (they are nine tenths of the bytes)."""
    if not checkov.is_file():
        raise ScanError(f"{checkov}: checkov is not installed (make scan installs it)")
    runs = []
    for variant in sorted(p.name for p in dist.iterdir() if p.is_dir()):
        # from dist/: the report's file paths then start with the variant
        args = [str(checkov), "-d", variant, "--framework", "kubernetes", "--skip-download", "--quiet"]
        args += ["--compact", "--skip-path", r"customresourcedefinition\.", "-o", "json"]
        runs.append(
            subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=dist)
        )
    reports = []
    for run in runs:
        stdout, stderr = run.communicate()
        if run.returncode not in (0, 1):  # 1: some check failed
            raise ScanError(f"checkov exited {run.returncode}: {stderr.strip().splitlines()[-1:]}")
        try:
            report = json.loads(stdout)
        except json.JSONDecodeError as error:
            raise ScanError(f"checkov printed no JSON report ({error})") from None
        reports += report if isinstance(report, list) else [report]
    return reports


def judge(report: Any, exceptions: list[Exception_]) -> Verdict:
    passed, failed, findings = findings_of(report)
    new = [f for f in findings if not any(e.covers(f) for e in exceptions)]
    used = {id(e) for f in findings for e in exceptions if e.covers(f)}
    excepted: dict[str, int] = {}
    for f in findings:
        if f not in new:
            excepted[f.check] = excepted.get(f.check, 0) + 1
    return Verdict(passed, failed, new, [e for e in exceptions if id(e) not in used], excepted)


def render(verdict: Verdict, exceptions: list[Exception_]) -> str:
    lines = [
        f"checkov: {verdict.passed} passed, {verdict.failed} failed; "
        f"{sum(verdict.excepted.values())} findings excepted by {len(exceptions) - len(verdict.stale)} "
        f"reviewed entries, {len(verdict.new)} new"
    ]
    lines += [f"NEW {f}" for f in verdict.new]
    lines += [
        f"STALE exception {e.check} {list(e.where)}: it covers no finding any more" for e in verdict.stale
    ]
    return "\n".join(lines)
