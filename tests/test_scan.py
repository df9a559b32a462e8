"""The scanner gate: checkov's findings judged against the reviewed exceptions (make scan runs
checkov itself; these tests feed the judge checkov-shaped reports)."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sitegen.report.scan import (
    Exception_,
    ScanError,
    findings_of,
    judge,
    load_exceptions,
    per_container,
    render,
    run_checkov,
    staged_text,
)

from .conftest import REPO

EXCEPTIONS = REPO / ".ci" / "scanner" / "exceptions.yaml"


def _report(*failed: tuple[str, str, str], passed: int = 10) -> dict:
    return {
        "check_type": "kubernetes",
        "summary": {"passed": passed, "failed": len(failed)},
        "results": {
            "failed_checks": [
                {"check_id": c, "check_name": f"title of {c}", "file_path": f, "resource": r}
                for c, f, r in failed
            ]
        },
    }


PRIVILEGED = (
    "CKV_K8S_16",
    "/one-cluster/apps/ai/cilium/kube-system.daemonset.cilium.yaml",
    "DaemonSet.kube-system.cilium",
)
ROOTED = ("CKV_K8S_16", "/one-cluster/apps/ai/models/x.yaml", "StatefulSet.ai-research.llama")
VIP = ("CKV_K8S_19", "/two-cluster/kubeadm/aistor/kube-vip.yaml", "Pod.kube-system.kube-vip")


def test_findings_name_the_components_object_and_where_it_was_found():
    _, failed, found = findings_of(
        [_report(PRIVILEGED, VIP), {"check_type": "secrets", "summary": {"failed": 9}}]
    )
    assert failed == 2
    assert [(f.variant, f.cluster, f.subject) for f in found] == [
        ("one-cluster", "ai", "cilium/DaemonSet.kube-system.cilium"),
        ("two-cluster", "aistor", "kubeadm/Pod.kube-system.kube-vip"),
    ]


def test_a_cluster_added_with_the_same_components_needs_no_new_entry():
    """Put-back: entries named `<cluster>/<app>/...`, so adopting the three-cluster example turned the
    findings accepted for `ai` into 403 new ones for `gpu`. An entry names the component's object."""
    entries = [Exception_("CKV_K8S_16", ("cilium/DaemonSet.kube-system.cilium",), "the CNI")]
    in_gpu = ("CKV_K8S_16", "/three-cluster/apps/gpu/cilium/kube-system.daemonset.cilium.yaml", PRIVILEGED[2])
    verdict = judge(_report(PRIVILEGED, in_gpu), entries)
    assert verdict.ok and verdict.excepted == {"CKV_K8S_16": 2}


def test_a_finding_no_entry_covers_fails_and_is_named():
    entries = [Exception_("CKV_K8S_16", ("cilium/DaemonSet.kube-system.cilium",), "the CNI")]
    verdict = judge(_report(PRIVILEGED, ROOTED), entries)
    assert not verdict.ok
    assert [str(f) for f in verdict.new] == [
        "CKV_K8S_16 one-cluster/ai: models/StatefulSet.ai-research.llama: title of CKV_K8S_16"
    ]
    text = render(verdict, entries, ".ci/scanner/exceptions.yaml")  # as `sitegen scan` names it
    assert "0 new" not in text
    assert (
        "NEW CKV_K8S_16 one-cluster/ai: models/StatefulSet.ai-research.llama: title of CKV_K8S_16 "
        "(dist/one-cluster/apps/ai/models/x.yaml); if a reviewer accepts it, add "
        "'models/StatefulSet.ai-research.llama' to the `where` of CKV_K8S_16 in .ci/scanner/exceptions.yaml"
    ) in text


def test_an_exception_that_covers_nothing_fails():
    cilium = "cilium/DaemonSet.kube-system.cilium"
    entries = [
        Exception_("CKV_K8S_16", (cilium, "cilium/DaemonSet.kube-system.gone"), "the CNI"),
        Exception_("CKV_K8S_19", (cilium,), "x"),
    ]
    verdict = judge(_report(PRIVILEGED), entries)
    assert verdict.new == []
    assert [(e.check, e.where) for e in verdict.stale] == [
        ("CKV_K8S_16", ("cilium/DaemonSet.kube-system.gone",)),  # each name on its own
        ("CKV_K8S_19", (cilium,)),
    ]
    assert "STALE exception CKV_K8S_19" in render(verdict, entries, str(EXCEPTIONS))


def test_an_entry_names_objects_not_apps(tmp_path: Path):
    path = tmp_path / "exceptions.yaml"
    path.write_text("- check: CKV_K8S_16\n  where: ['*/cilium/*']\n  reason: the CNI\n")
    with pytest.raises(ScanError, match=r"name objects \(and their containers\), not patterns"):
        load_exceptions(path)
    path.write_text("- check: CKV_K8S_16\n  where: ['*']\n  reason: the CNI\n")
    with pytest.raises(ScanError, match="only the site-wide checks"):
        load_exceptions(path)


def test_every_entry_needs_a_reason(tmp_path: Path):
    path = tmp_path / "exceptions.yaml"
    path.write_text("- check: CKV_K8S_43\n  where: ['*']\n  reason: ''\n")
    with pytest.raises(ScanError, match="entry 0: needs exactly check, where and a reason"):
        load_exceptions(path)


def test_the_reviewed_file_loads_and_scopes_the_dangerous_checks():
    entries = {e.check: e for e in load_exceptions(EXCEPTIONS)}
    assert all(len(e.reason) > 10 for e in entries.values())
    # host access is excepted for the node agents that need it, never site-wide
    for check in ("CKV_K8S_16", "CKV_K8S_17", "CKV_K8S_19", "CKV_K8S_25", "CKV_K8S_39", "CKV2_K8S_5"):
        assert "*" not in entries[check].where, check
    assert not entries["CKV_K8S_16"].covers(judge(_report(ROOTED), []).new[0])


CHECKOV = REPO / ".venv-scan" / "bin" / "checkov"
AGENT = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "nodes"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {
                "containers": [
                    {"name": "driver", "image": "x:1", "securityContext": {"privileged": True}},
                    {"name": "exporter", "image": "y:1"},
                ]
            },
        },
    },
}


def test_each_container_is_judged_on_its_own():
    copies = per_container(AGENT)
    assert [c["metadata"]["name"] for c in copies] == ["agent__driver", "agent__exporter"]
    assert [len(c["spec"]["template"]["spec"]["containers"]) for c in copies] == [1, 1]
    assert AGENT["spec"]["template"]["spec"]["containers"][1]["name"] == "exporter"  # the input untouched


@pytest.mark.parametrize(
    "objects",
    [
        [AGENT, {"kind": "ConfigMap", "data": {"a": "yes", "b": "0123", "c": "1e3", "d": "é ✓", "e": "~"}}],
        [{"kind": "ConfigMap", "data": {"day": datetime.date(2026, 12, 7)}}],  # JSON has no date
        [{"kind": "ConfigMap", "data": {"ratio": float("nan")}}],  # nor NaN
    ],
    ids=["json", "date", "nan"],
)
def test_checkov_reads_back_the_staged_objects(objects):
    """checkov parses the stage with PyYAML's safe loader: what it reads must be what dist/ holds."""
    read = list(yaml.load_all(staged_text(objects), Loader=yaml.SafeLoader))
    assert repr(read) == repr(objects)  # repr: NaN is not equal to itself


@pytest.mark.skipif(not CHECKOV.is_file(), reason="checkov is installed by make scan-deps (make test does)")
def test_a_new_privileged_container_in_an_excepted_object_fails_the_scan(tmp_path: Path):
    """checkov itself stops at a workload's first privileged container; the split judges each, so the
    exception that names `driver` does not cover a second privileged container beside it."""
    import copy

    dist = tmp_path / "dist"
    path = dist / "one-cluster/apps/ai/agents/nodes.daemonset.agent.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(AGENT))
    entries = [Exception_("CKV_K8S_16", ("agents/DaemonSet.nodes.agent[driver]",), "the driver")]
    verdict = judge(run_checkov(CHECKOV, dist), entries)
    assert [f for f in verdict.new if f.check == "CKV_K8S_16"] == []

    second = copy.deepcopy(AGENT)
    second["spec"]["template"]["spec"]["containers"].insert(
        1, {"name": "debug", "image": "z:1", "securityContext": {"privileged": True}}
    )
    path.write_text(yaml.safe_dump(second))
    verdict = judge(run_checkov(CHECKOV, dist), entries)
    assert [f.subject for f in verdict.new if f.check == "CKV_K8S_16"] == [
        "agents/DaemonSet.nodes.agent[debug]"
    ]


def test_a_charts_hashed_job_is_one_object_in_every_cluster():
    """Put-back: Cilium names its certificate Job after a digest of the cluster's values, so the
    three-cluster example's `gpu` cluster had a Job no entry named."""
    entries = [Exception_("CKV_K8S_23", ("cilium/Job.kube-system.hubble-generate-certs-<hash>",), "certgen")]
    in_ai = (
        "CKV_K8S_23",
        "/one-cluster/apps/ai/cilium/j.yaml",
        "Job.kube-system.hubble-generate-certs-70fad90381",
    )
    in_gpu = (
        "CKV_K8S_23",
        "/three-cluster/apps/gpu/cilium/j.yaml",
        "Job.kube-system.hubble-generate-certs-eca34aee65",
    )
    verdict = judge(_report(in_ai, in_gpu), entries)
    assert verdict.ok and verdict.excepted == {"CKV_K8S_23": 2}


def test_an_entry_for_a_component_the_site_does_not_run_is_not_stale():
    """A site that adopts another set of clusters (no GPU serving on its hub, say) keeps the reviewed
    file as it is: an entry is stale only when its app runs here and no finding needs it."""
    entries = [
        Exception_("CKV_K8S_16", ("cilium/DaemonSet.kube-system.cilium",), "the CNI"),
        Exception_("CKV_K8S_22", ("models/StatefulSet.ai-research.llama[vllm]",), "vLLM writes its cache"),
    ]
    assert judge(_report(PRIVILEGED), entries).ok
    passing_model = {
        "check_type": "kubernetes",
        "summary": {"passed": 1, "failed": 0},
        "results": {"passed_checks": [
            {"check_id": "CKV_K8S_22", "file_path": "/one-cluster/apps/ai/models/x.yaml",
             "resource": "StatefulSet.ai-research.llama__vllm"}
        ], "failed_checks": []},
    }  # fmt: skip
    verdict = judge([_report(PRIVILEGED), passing_model], entries)
    assert [(e.check, e.where) for e in verdict.stale] == [
        ("CKV_K8S_22", ("models/StatefulSet.ai-research.llama[vllm]",))
    ]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to give back")
def test_checkov_runs_on_every_cpu_though_the_cli_keeps_to_one(tmp_path: Path):
    """Put-back: the CLI keeps itself on one CPU for cdk8s (compose/tools.converse_on_one_cpu), and
    checkov inherited that CPU: its parallel parse and the two variants' runs shared it (21 s, not 12)."""
    cpus = tmp_path / "cpus"
    fake = tmp_path / "checkov"
    fake.write_text(
        f"#!{sys.executable}\nimport os\nopen({str(cpus)!r}, 'a').write(f'{{len(os.sched_getaffinity(0))}}\\n')\n"
        'print(\'{"check_type": "kubernetes", "summary": {"passed": 0, "failed": 0}, "results": {}}\')\n'
    )
    fake.chmod(0o755)
    dist = tmp_path / "dist"
    (dist / "one-cluster" / "bootstrap").mkdir(parents=True)
    (dist / "one-cluster" / "bootstrap" / "x.yaml").write_text("kind: ConfigMap\n")
    pinned = (
        "from sitegen.compose.tools import converse_on_one_cpu; converse_on_one_cpu()\n"
        "from pathlib import Path; from sitegen.report.scan import run_checkov\n"
        f"run_checkov(Path({str(fake)!r}), Path({str(dist)!r}))\n"
    )
    subprocess.run([sys.executable, "-c", pinned], check=True, cwd=REPO)
    assert cpus.read_text().split() == [str(len(os.sched_getaffinity(0)))]
