"""The per-host steps as Ansible (issue 37): an inventory of every host from config/, and a playbook
that ansible-playbook's syntax check and ansible-lint's production profile accept, whose every file
exists in dist/ for every group it runs on."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from sitegen.model import resolve

from .conftest import DIST, REPO

ANSIBLE = REPO / ".venv-ansible" / "bin"
VARIANTS = ("one-cluster", "two-cluster")


def _load(path: Path):
    return yaml.safe_load(path.read_text())


def _groups(variant: str) -> dict[str, dict]:
    inventory = _load(DIST / variant / "ansible/inventory.yml")
    return {g: body for c in inventory["all"]["children"].values() for g, body in c["children"].items()}


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_inventory_holds_every_host_of_the_variant(site, variant):
    groups = _groups(variant)
    layout = resolve(site, variant)
    expected = {h.name: str(h.address) for c in layout.clusters for p in c.pools for h in p.hosts}
    found = {h: v["ansible_host"] for g in groups.values() for h, v in g["hosts"].items()}
    assert found == expected and len(found) == 102
    assert {g: v["vars"]["sitegen_pool"] for g, v in groups.items()} == {
        f"{c.name}_{p.name}".replace("-", "_"): p.name for c in layout.clusters for p in c.pools
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_file_the_playbook_copies_exists(variant):
    """Each `src` of the playbook, its variables filled in for each host, names a file of dist/."""
    plays = _load(DIST / variant / "ansible/site.yml")
    tasks = [t for p in plays for t in p["tasks"] for t in (t.get("block") or [t])]
    sources = [
        t["ansible.builtin.copy"]["src"] for t in tasks if "src" in (t.get("ansible.builtin.copy") or {})
    ]
    sources += [p.get("vars", {}).get("sitegen_encryption") for p in plays if p.get("vars")]
    for group in _groups(variant).values():
        for host in group["hosts"]:
            facts = {
                **group["vars"],
                "inventory_hostname": host,
                "playbook_dir": str(DIST / variant / "ansible"),
            }
            facts["sitegen_kubeadm"] = facts["sitegen_kubeadm"].replace(
                "{{ playbook_dir }}", facts["playbook_dir"]
            )
            for source in sources:
                if ("etcd-" in source and not facts["sitegen_control_plane"]) or (
                    "fabric-" in source and not facts["sitegen_fabric"]
                ):
                    continue
                if (
                    any(name in source for name in ("audit-", "admission-", "authentication-", "encryption-"))
                    and not facts["sitegen_control_plane"]
                ):
                    continue
                path = re.sub(r"\{\{ (\w+) \}\}", lambda m, facts=facts: str(facts[m.group(1)]), source)
                assert Path(path).exists(), (host, path)
            for script in (
                "host-prep",
                "host-preflight",
                *(("fabric-prep", "fabric-preflight") if facts["sitegen_fabric"] else ()),
            ):
                assert (Path(facts["sitegen_kubeadm"]) / f"{script}-{facts['sitegen_pool']}.sh").is_file()


def _ansible(tool: str, folder: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    assert (ANSIBLE / tool).exists(), f"{ANSIBLE / tool} is missing: `make ansible-deps` installs it"
    env = {
        "PATH": f"{ANSIBLE}:/usr/bin:/bin", "HOME": str(home), "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_HOME": str(home / ".ansible"), "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": os.environ.get("LANG", "C.UTF-8"), "NO_COLOR": "1",
    }  # fmt: skip
    return subprocess.run(
        [str(ANSIBLE / tool), *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_playbook_passes_syntax_check_and_lint(tmp_path, variant):
    folder = DIST / variant / "ansible"
    syntax = _ansible(
        "ansible-playbook", folder, "--syntax-check", "-i", "inventory.yml", "site.yml", home=tmp_path
    )
    assert syntax.returncode == 0, syntax.stdout + syntax.stderr
    lint = _ansible(
        "ansible-lint",
        folder,
        "--offline",
        "--profile",
        "production",
        "site.yml",
        "inventory.yml",
        home=tmp_path,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_lint_refuses_what_it_should(tmp_path):
    """ansible-lint here is no formality: a task without a name and a bare module name fail it."""
    folder = tmp_path / "play"
    folder.mkdir()
    (folder / "site.yml").write_text("---\n- name: X\n  hosts: all\n  tasks:\n    - command: echo hi\n")
    lint = _ansible("ansible-lint", folder, "--offline", "--profile", "production", "site.yml", home=tmp_path)
    assert lint.returncode != 0 and "fqcn" in lint.stdout + lint.stderr
