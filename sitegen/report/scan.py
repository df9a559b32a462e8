"""A recognised scanner over the hydrated output: checkov's Kubernetes checks on every object of dist/,
judged against a reviewed exceptions file.

Every failed check must be excepted by an entry that names the check, the objects it may fail on
(`<cluster>/<app>/<Kind>.<namespace>.<name>`, with `[<container>]` for a check that judged one
container: workloads are split per container before checkov reads them) and why; only the site-wide
policies take `*`. A finding no entry covers fails, and so does a named object no finding needs any
more (a stale exception hides the next regression).
checkov runs with `--skip-download`: nothing is fetched.
"""

from __future__ import annotations

import copy as copy_module
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sitegen.compose.tools import every_cpu
from sitegen.errors import SiteError
from sitegen.model import paths
from sitegen.tree.fields import dig


class ScanError(SiteError):
    """The scanner could not run or its output is not what this module reads."""


@dataclass(frozen=True)
class Finding:
    check: str
    title: str
    variant: str
    # <app>/<Kind>.<namespace>.<name>, with [<container>] when the check judged one container;
    # kubeadm/...; bootstrap/...: the object as its component makes it, in whichever cluster
    subject: str
    cluster: str = ""  # where this one was found ("" beside the clusters: bootstrap/)
    file: str = ""  # the file of dist/ that holds it

    def __str__(self) -> str:
        where = f"{self.variant}/{self.cluster}" if self.cluster else self.variant
        return f"{self.check} {where}: {self.subject}: {self.title}"


# Checks that judge every object alike, by site policy (their entries say why): they alone may be
# excepted with `where: ["*"]`. Every other entry names its objects (and containers) one by one, so a
# new object, or a new container in an excepted object, is a new finding.
SITE_WIDE = frozenset({"CKV_K8S_11", "CKV_K8S_15", "CKV_K8S_40", "CKV_K8S_43"})
# In the copy checkov reads, each container of a workload is an object of its own, named
# <name>__<container>: checkov stops at a workload's first failing container, the copies do not.
CONTAINER_MARK = "__"
INIT_MARK = "__init"
# Kubernetes refuses probes on init containers: checkov's probe checks do not apply to them.
PROBE_CHECKS = frozenset({"CKV_K8S_8", "CKV_K8S_9"})


@dataclass(frozen=True)
class Exception_:
    check: str
    where: tuple[str, ...]
    reason: str

    def covers(self, finding: Finding) -> bool:
        return finding.check == self.check and ("*" in self.where or finding.subject in self.where)


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
        check, where = str(entry["check"]), tuple(entry["where"])
        for pattern in where:
            if pattern == "*" and check in SITE_WIDE:
                continue
            if any(c in pattern for c in "*?"):
                raise ScanError(
                    f"{path}: entry {i} ({check}): {pattern!r}: name objects (and their containers), "
                    f"not patterns; only the site-wide checks {', '.join(sorted(SITE_WIDE))} take '*'"
                )
        found.append(Exception_(check, where, str(entry["reason"])))
    return found


# A chart's Job named with a digest of its cluster's values (Cilium's `hubble-generate-certs-<10 hex>`):
# one object per component whatever the digest, so its entry holds in every cluster.
_HASHED_JOB = re.compile(r"^(Job\.[^.]+\..+)-[0-9a-f]{10}$")
HASH = "<hash>"


def _subject(file_path: str, resource: str) -> tuple[str, str, str]:
    """(variant, cluster, subject) of a finding: the subject names the component's object, not the
    cluster, so a cluster added or renamed with the same components needs no new entry."""
    resource = _HASHED_JOB.sub(rf"\1-{HASH}", resource)
    rel = PurePosixPath(file_path.lstrip("/"))
    variant, area, *rest = rel.parts
    if area == paths.APPS:
        return variant, rest[0], f"{rest[1]}/{resource}"
    if area == paths.KUBEADM:  # host files: static pods
        return variant, rest[0], f"{area}/{resource}"
    return variant, "", f"{area}/{resource}"


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
        for item in dig(part, "results", "failed_checks") or []:
            kind_ns, _, container = item["resource"].partition(CONTAINER_MARK)
            if container.endswith(INIT_MARK):
                if item["check_id"] in PROBE_CHECKS:
                    continue
                container = container.removesuffix(INIT_MARK)
            variant, cluster, subject = _subject(item["file_path"], kind_ns)
            keys = dig(item, "check_result", "evaluated_keys") or []
            if container and any("ontainers/[" in key for key in keys):
                subject = f"{subject}[{container}]"
            file = f"dist/{item['file_path'].lstrip('/')}"
            found.append(Finding(item["check_id"], item["check_name"], variant, subject, cluster, file))
    return passed, failed, sorted(set(found), key=str)


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if obj.get("kind") == "Pod":
        return spec
    if obj.get("kind") == "CronJob":
        spec = dig(spec, "jobTemplate", "spec") or {}
    template = spec.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    return pod if isinstance(pod, dict) and "containers" in pod else None


def per_container(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A workload as one copy per container (init containers too, each as the copy's container), named
    <name>__<container>; any other object as it is."""
    pod = _pod_spec(obj)
    if pod is None:
        return [obj]
    copies = []
    for field in ("containers", "initContainers"):
        for container in pod.get(field) or []:
            copy = copy_module.deepcopy(obj)
            copy_pod = _pod_spec(copy)
            assert copy_pod is not None
            # an init container is judged as the copy's one container: a pod of init containers only
            # fails checks that look for a main container (seccomp), whatever its init containers hold
            copy_pod["containers"] = [container]
            copy_pod.pop("initContainers", None)
            init = INIT_MARK if field == "initContainers" else ""
            name = f"{obj['metadata']['name']}{CONTAINER_MARK}{container['name']}{init}"
            copy["metadata"] = {**copy["metadata"], "name": name}
            copies.append(copy)
    return copies


def _stage(dist: Path, variant: str, stage: Path) -> None:
    """The variant's objects as checkov reads them: workloads split per container, CRDs left out
    (checkov has no check for them, and they are nine tenths of the bytes)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted((dist / variant).rglob("*.yaml")):
        if "customresourcedefinition." in path.name:
            continue
        docs = [d for d in yaml.load_all(path.read_text(), Loader=loader) if isinstance(d, dict)]
        target = stage / path.relative_to(dist)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(staged_text([copy for doc in docs for copy in per_container(doc)]))


def staged_text(objects: list[dict[str, Any]]) -> str:
    """The objects as one YAML stream of JSON documents (JSON is YAML, and five times faster to write
    than block style); YAML's own dump for values JSON has no form for (a date, NaN), so checkov reads
    back what the loader gave."""
    try:
        return "".join(f"---\n{json.dumps(obj, allow_nan=False)}\n" for obj in objects)
    except (TypeError, ValueError):
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump_all(objects, Dumper=dumper, sort_keys=False)


def run_checkov(checkov: Path, dist: Path) -> list[Any]:
    """checkov over every YAML object of dist/ (host files and values are not Kubernetes objects), one
    process per variant side by side, on a staged copy where each container is judged on its own."""
    if not checkov.is_file():
        raise ScanError(f"{checkov}: checkov is not installed (make scan installs it)")
    with tempfile.TemporaryDirectory(prefix="sitegen-scan-") as staged:
        stage = Path(staged)
        runs = []
        for variant in sorted(p.name for p in dist.iterdir() if p.is_dir()):
            _stage(dist, variant, stage)
            # from the stage: the report's file paths then start with the variant
            args = [str(checkov), "-d", variant, "--framework", "kubernetes", "--skip-download", "--quiet"]
            args += ["--compact", "-o", "json"]
            # every CPU: the CLI keeps itself on one for cdk8s, and checkov parses in parallel
            runs.append(
                subprocess.Popen(
                    args,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=stage,
                    preexec_fn=every_cpu,
                )
            )
        return _reports(runs)


def _reports(runs: list[subprocess.Popen[str]]) -> list[Any]:
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


def scanned_apps(report: Any) -> set[str]:
    """The first segment of the subjects of every object checkov judged, passed or failed: the apps
    (components) this site runs, `kubeadm`, `bootstrap`."""
    found = set()
    for part in report if isinstance(report, list) else [report]:
        results = part.get("results") or {}
        for item in (results.get("passed_checks") or []) + (results.get("failed_checks") or []):
            found.add(_subject(item["file_path"], item["resource"])[2].split("/")[0])
    return found


def judge(report: Any, exceptions: list[Exception_]) -> Verdict:
    passed, failed, findings = findings_of(report)
    new = [f for f in findings if not any(e.covers(f) for e in exceptions)]
    needed = {(f.check, f.subject) for f in findings}
    apps = scanned_apps(report)
    # a named object (or container) of an app this site runs that no finding needs any more is stale
    # on its own; one of an app it does not run (a component of the generator's other examples) is not
    stale = [
        Exception_(e.check, unused, e.reason)
        for e in exceptions
        if (
            unused := tuple(
                w for w in e.where if w != "*" and (e.check, w) not in needed and w.split("/")[0] in apps
            )
        )
        or ("*" in e.where and not any(f.check == e.check for f in findings))
    ]
    excepted: dict[str, int] = {}
    for f in findings:
        if f not in new:
            excepted[f.check] = excepted.get(f.check, 0) + 1
    return Verdict(passed, failed, new, stale, excepted)


def render(verdict: Verdict, exceptions: list[Exception_], exceptions_file: str) -> str:
    lines = [
        f"checkov: {verdict.passed} passed, {verdict.failed} failed; "
        f"{sum(verdict.excepted.values())} findings excepted by {len(exceptions)} reviewed entries "
        f"naming {sum(len(e.where) for e in exceptions)} objects and containers, {len(verdict.new)} new"
    ]
    lines += [
        f"NEW {f} ({f.file}); if a reviewer accepts it, add {f.subject!r} to the `where` of {f.check} "
        f"in {exceptions_file}, with the reason"
        for f in verdict.new
    ]
    lines += [
        f"STALE exception {e.check} {list(e.where) or ['*']}: no finding needs it any more; "
        f"remove {'these names' if len(e.where) > 1 else 'it'} from its `where` in {exceptions_file}"
        for e in verdict.stale
    ]
    return "\n".join(lines)
