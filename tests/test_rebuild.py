"""Hosts that come back empty: the RUNBOOK's replacement sections replayed by bringup on a rebuilt host,
and each step they need put back out, one at a time; a carved control-plane member moved through
config/ alone, its steps shown by `sitegen diff` and replayed."""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import pytest

from constructs.etcd_backup import ARCHIVED_FILES, HOST_ARCHIVE_DIR
from sitegen.check.bringup import rebuild
from sitegen.check.bringup.events import Stop
from sitegen.report.diff import compare
from sitegen.report.diff_render import render_text

from .bringup_cases import ONE, TWO, installed, with_runbook_edited
from .conftest import DIST, SITEGEN, edit_yaml


@pytest.fixture(scope="module")
def up(site, inputs):
    return {variant: installed(site, inputs, variant) for variant in (ONE, TWO)}


def replayed(up, variant: str = ONE, edit=None):
    """The day-2 rebuilds on a copy of the installed variant, its RUNBOOK edited first; the blocker's
    text, or None."""
    sim = copy.deepcopy(up[variant])
    if edit is not None:
        with_runbook_edited(sim, variant, edit)
    sim.state.day2 = True
    try:
        rebuild.hosts_rebuilt(sim)
    except Stop as stop:
        return str(stop.blocker), sim
    return None, sim


def in_section(title: str, old: str, new: str):
    """An edit of one RUNBOOK section only."""

    def edit(text: str) -> str:
        start = text.index(f"### {title}")
        end = text.index("\n### ", start + 1)
        section = text[start:end]
        assert old in section, old
        return text[:start] + section.replace(old, new) + text[end:]

    return edit


REPLACE = "Replacing a control-plane member of `ai`"


@pytest.mark.parametrize("variant", [ONE, TWO])
def test_a_member_and_a_host_of_each_pool_come_back_from_empty_hosts(up, variant):
    blocker, sim = replayed(up, variant)
    assert blocker is None, blocker
    said = [e.what for e in sim.state.result.timeline if "rebuilt empty" in e.what]
    layout = sim.state.layout
    assert len(said) == sum(1 + len(c.worker_pools) for c in layout.clusters)
    for cluster in layout.clusters:
        assert sorted(sim.state.etcd[cluster.name].members) == sorted(
            h.name for h in cluster.control_plane.hosts
        )
        assert sim.state.etcd[cluster.name].healthy()


GPU = "Rebuilding a host of pool `gpu` (`ai`)"
BASELINE = (
    "bash dist/one-cluster/kubeadm/ai/host-prep-control-plane.sh\nreboot\n"
    "bash dist/one-cluster/kubeadm/ai/host-preflight-control-plane.sh\n"
)
# Each step a rebuilt host needs, taken out of its section (or changed), and what bringup then says.
DEFECTS = {
    "the lost member left in etcd": (
        REPLACE, "member remove <ID of <member>>", "member list",
        "Peer URLs already exists (member cp05 is still in etcd",
    ),
    "the certificates not uploaded again": (
        REPLACE, 'kubeadm init phase upload-certs --upload-certs --certificate-key "$KUBEADM_CERTIFICATE_KEY"\n', "",
        "cannot download the control plane's certificates",
    ),
    "a token only generated": (
        REPLACE, "kubeadm token create --ttl 2h --description 'replace <member>'", "kubeadm token generate",
        "never registered",
    ),
    "the token of day one, from the vault": (
        REPLACE, 'token="$KUBEADM_TOKEN" certificate_key', "certificate_key", "its bootstrap token is the init's token",
    ),
    "a new encryption key": (
        REPLACE, "$(vault kv get -field=key secret/kubernetes/ai/encryption)", "$(head -c 32 /dev/urandom | base64)",
        "reads none of the Secrets in etcd",
    ),
    "no audit policy": (
        REPLACE, "audit-policy.yaml /etc/kubernetes/audit/policy.yaml", "audit-policy.yaml /tmp/x",
        "--audit-policy-file names /etc/kubernetes/audit/policy.yaml",
    ),
    "no baseline": (REPLACE, BASELINE, "", "disables the CRI"),
    "a GPU node left cordoned": (GPU, "kubectl uncordon <before> <node>\n", "kubectl uncordon <before>\n", "gpu12: stays cordoned"),
    "a pair test beside a node at work": (
        GPU, "kubectl drain <before> --ignore-daemonsets", "kubectl get node <before> --ignore-daemonsets",
        "Job gpu-health/nccl-pair-gpu11-gpu12: never completes",
    ),
    "a burn-in Job of before still there": (
        GPU, "delete job --ignore-not-found burn-in-<node> ", "delete job --ignore-not-found ",
        "Job gpu-health/burn-in-gpu12: kubectl create job: AlreadyExists",
    ),
    "a GPU node without its rails": (
        GPU, "bash dist/one-cluster/kubeadm/ai/fabric-prep-gpu.sh\nbash dist/one-cluster/kubeadm/ai/fabric-preflight-gpu.sh\n", "",
        "gpu12",
    ),
}  # fmt: skip


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_step_of_a_rebuild_is_needed(up, defect):
    title, old, new, said = DEFECTS[defect]
    blocker, _ = replayed(up, edit=in_section(title, old, new))
    assert blocker is not None and said in blocker, blocker


def test_the_encryption_key_is_escrowed_with_the_pki(up):
    """The PKI archive the second target keeps, encrypted to the offline key, holds the API server's
    encryption configuration beside the CAs: the host archives both, the CronJob uploads the result."""
    sim = up[ONE]
    jobs = [
        body
        for path, docs in sim.state.tree.items()
        if "etcd-backup" in str(path)
        for body in docs
        if body.get("kind") == "CronJob" and body["metadata"]["name"].startswith("pki-backup")
    ]
    assert jobs
    for job in jobs:
        spec = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
        assert paths == {HOST_ARCHIVE_DIR}
    assert {"enc", "pki/ca.key", "pki/etcd/ca.key", "pki/front-proxy-ca.key", "pki/sa.key"} <= set(
        ARCHIVED_FILES
    )


def _commit(repo: Path, message: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)


def test_a_carved_member_moves_through_config_alone(tmp_path, config_copy, linked_copy):
    """The AIStor cluster's cmp50 moves to cmp47: `variants.yaml` and `clusters.yaml` change, nothing
    else; synth refuses the first without the second, `sitegen diff` shows the move's steps, and
    bringup replays them from the state before (cmp50 a member, cmp47 empty)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    linked_copy(DIST, repo / "dist")
    _commit(repo, "site")

    def synth() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SITEGEN), "synth", "--config", str(config_copy), "--out", str(repo / "dist")],
            capture_output=True, text=True,
        )  # fmt: skip

    edit_yaml(
        config_copy,
        "variants.yaml",
        lambda v: v["two-cluster"]["clusters"]["aistor"]["control_plane"].update(
            hosts=["cmp48", "cmp49", "cmp47"]
        ),
    )
    refused = synth()
    assert refused.returncode == 2
    assert (
        "clusters.yaml: aistor.replaced_members: control-plane member cmp50 of aistor is gone"
        in refused.stderr
    )
    edit_yaml(config_copy, "clusters.yaml", lambda c: c["aistor"].update(replaced_members={"cmp50": "cmp47"}))
    done = synth()
    assert done.returncode == 0, done.stderr
    _commit(repo, "cmp50 to cmp47")
    shown = render_text(compare(repo, "HEAD~1", "HEAD"))
    section = shown[shown.index("§ Moving control-plane member cmp50 to cmp47 (`aistor`):") :]
    steps = [
        line.removeprefix("        + ") for line in section.splitlines()[1:] if line.startswith("        + ")
    ]
    written = "envsubst < dist/two-cluster/kubeadm/aistor/join-control-plane-cmp47.yaml | install -m 0600 /dev/stdin"
    assert any(step.startswith(written) for step in steps)
    join = next(i for i, step in enumerate(steps) if step.startswith("kubeadm join --config"))
    assert join < steps.index("kubectl delete node cmp50")
    checked = subprocess.run(
        [str(SITEGEN), "bringup", "--config", str(config_copy), "--dist", str(repo / "dist"), "--variant", TWO],
        capture_output=True, text=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout[-2000:]
    assert re.search(
        r"Moving control-plane member cmp50 to cmp47 .*cmp47 joined empty, cmp50 left", checked.stdout
    )
