"""The RUNBOOK's per-host steps as Ansible: an inventory of every host of the variant (from config/) and
a playbook that runs, pool by pool and batch by batch, what the RUNBOOK otherwise has typed on each
host: the baseline (its containerd configuration included), a reboot, the preflight; the registry
mirrors; the fabric preparation and its check; the kubelet files of the join (the pool's kubelet
reservations, on the control plane the API server's files and the host's etcd patch).

Both sit in `dist/<variant>/ansible/` and read the host files beside them in `dist/<variant>/`. The
cluster-wide steps (kubeadm init and joins, one control-plane node at a time, the labels, the CNI)
stay in the RUNBOOK: their order is the cluster's, not a host's. `.yml`, not `.yaml`: they are no
Kubernetes objects, and validate reads those. Only `ansible.builtin` modules: nothing from Galaxy.
"""

from __future__ import annotations

from typing import Any

import yaml

from constructs.api_server_policies import (
    ADMISSION_CONFIG,
    AUDIT_POLICY,
    AUTHENTICATION_CONFIG,
    ENCRYPTION_CONFIG,
)
from constructs.etcd_backup import HOST_RECIPIENT
from constructs.kubeadm import ETCD_PATCH, KUBELET_PATCH, PATCHES_DIR
from sitegen.compose.writer import OutputFile
from sitegen.model import Site, VariantLayout, paths

INVENTORY = "inventory.yml"
PLAYBOOK = "site.yml"
PKI_RECIPIENT_TAG = "pki-recipient"
HOST_SCRIPTS = "/var/lib/sitegen/scripts"  # where the play copies the host scripts it runs (root's only)
# left to Ansible: the host's pool and kubeadm folder (inventory vars), the hosts to run on (-e sitegen_hosts=)
_POOL = "{{ sitegen_pool }}"
_KUBEADM = "{{ sitegen_kubeadm }}"
_HOSTS = "{{ sitegen_hosts | default('all') }}"


def group(cluster: str, pool: str) -> str:
    """An inventory group name (letters, digits and underscores, as Ansible wants them)."""
    return f"{cluster}_{pool}".replace("-", "_")


def inventory(site: Site, layout: VariantLayout) -> dict[str, Any]:
    clusters: dict[str, Any] = {}
    for cluster in layout.clusters:
        kubeadm = f"{{{{ playbook_dir }}}}/../{paths.KUBEADM}/{cluster.name}"
        pools: dict[str, Any] = {}
        for pool in cluster.pools:
            control_plane = pool is cluster.control_plane
            pools[group(cluster.name, pool.name)] = {
                "hosts": {h.name: {"ansible_host": str(h.address)} for h in pool.hosts},
                "vars": {
                    "sitegen_cluster": cluster.name,
                    "sitegen_pool": pool.name,
                    "sitegen_kubeadm": kubeadm,
                    "sitegen_control_plane": control_plane,
                    "sitegen_fabric": pool.name in site.fabric.nics,  # fabric_hosts.py writes its scripts
                },
            }
        clusters[cluster.name] = {"children": pools}
    return {"all": {"children": clusters}}


def _copy_and_run(script: str, what: str) -> list[dict[str, Any]]:
    return [
        {
            "name": f"Copy {what}",
            "ansible.builtin.copy": {
                "src": f"{{{{ sitegen_kubeadm }}}}/{script}",
                "dest": f"{HOST_SCRIPTS}/{script}",
                "mode": "0700",
            },
        },
        {
            "name": f"Run {what}",
            "ansible.builtin.command": {"cmd": f"bash {HOST_SCRIPTS}/{script}"},
            "register": "sitegen_run",
            "changed_when": True,
        },
    ]


def _check(script: str, what: str) -> list[dict[str, Any]]:
    return [
        *_copy_and_run(script, what)[:1],
        {
            "name": f"Check {what}",
            "ansible.builtin.command": {"cmd": f"bash {HOST_SCRIPTS}/{script}"},
            "register": "sitegen_check",
            "changed_when": False,
        },
    ]


def _install(src: str, dest: str, mode: str, when: str | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "name": f"Install {dest}",
        "ansible.builtin.copy": {"src": src, "dest": dest, "mode": mode},
    }
    if when:
        task["when"] = when
    return task


def _baseline_play(directory: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "Host baseline: prepare, reboot, check",
        "hosts": _HOSTS,
        "become": True,
        "tags": ["baseline"],
        "serial": "10%",  # a bad baseline stops the play on the first tenth of the hosts
        "max_fail_percentage": 0,
        "tasks": [
            directory,
            *_copy_and_run(f"host-prep-{_POOL}.sh", "the baseline of the pool"),
            {"name": "Reboot into the baseline's kernel and arguments", "ansible.builtin.reboot": {"reboot_timeout": 1800}},
            *_check(f"host-preflight-{_POOL}.sh", "the host against the baseline"),
        ],
    }  # fmt: skip


def _mirrors_play() -> dict[str, Any]:
    return {
        "name": "Registry mirrors: pull through Harbor",
        "hosts": _HOSTS,
        "become": True,
        "tags": ["mirrors"],
        "tasks": [
            {
                "name": "Install the registry hosts (the pull credential step fills their authorization in)",
                "ansible.builtin.copy": {
                    "src": f"{{{{ playbook_dir }}}}/../{paths.CONTAINERD}/{paths.CERTS_D}/",
                    "dest": "/etc/containerd/certs.d/",
                    "mode": "0600",
                    "force": False,
                },
            },
        ],
    }  # fmt: skip


def _fabric_play(directory: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "Fabric preparation: the RDMA rails of the pool",
        "hosts": _HOSTS,
        "become": True,
        "tags": ["fabric"],
        "serial": "10%",
        "max_fail_percentage": 0,
        "tasks": [
            directory,
            {
                "name": "Prepare and check the fabric",
                "when": "sitegen_fabric",
                "block": [
                    *_copy_and_run(f"fabric-prep-{_POOL}.sh", "the fabric preparation"),
                    *_check(f"fabric-preflight-{_POOL}.sh", "the fabric"),
                ],
            },
        ],
    }  # fmt: skip


def _join_files_play() -> dict[str, Any]:
    return {
        "name": "Kubelet and API server files of the join",
        "hosts": _HOSTS,
        "become": True,
        "tags": ["join-files"],
        "vars": {
            "sitegen_encryption": f"{_KUBEADM}/encryption-config.yaml",
            "sitegen_encryption_key": "{{ lookup('ansible.builtin.env', 'ENCRYPTION_KEY') }}",
            "sitegen_pki_recipient": "{{ lookup('ansible.builtin.env', 'PKI_RECIPIENT') }}",
        },
        "tasks": [
            {
                "name": "Refuse the control plane without the encryption key from the vault",
                "when": "sitegen_control_plane",
                "no_log": True,
                "ansible.builtin.assert": {
                    "that": ["sitegen_encryption_key | length > 0"],
                    "fail_msg": "ENCRYPTION_KEY is empty: export it from the vault first (RUNBOOK)",
                },
            },
            _install(f"{_KUBEADM}/kubelet-{_POOL}.yaml", f"{PATCHES_DIR}/{KUBELET_PATCH}", "0644"),
            _install(f"{_KUBEADM}/etcd-{{{{ inventory_hostname }}}}.yaml", f"{PATCHES_DIR}/{ETCD_PATCH}", "0644", "sitegen_control_plane"),
            _install(f"{_KUBEADM}/audit-policy.yaml", AUDIT_POLICY, "0600", "sitegen_control_plane"),
            _install(f"{_KUBEADM}/admission-config.yaml", ADMISSION_CONFIG, "0600", "sitegen_control_plane"),
            _install(f"{_KUBEADM}/authentication-config.yaml", AUTHENTICATION_CONFIG, "0600", "sitegen_control_plane"),
            {
                "name": f"Install {ENCRYPTION_CONFIG} with the key from the vault (ENCRYPTION_KEY)",
                "when": "sitegen_control_plane",
                "no_log": True,
                "ansible.builtin.copy": {
                    "content": (
                        "{{ lookup('ansible.builtin.file', sitegen_encryption)"
                        " | replace('${ENCRYPTION_KEY}', sitegen_encryption_key) }}"
                    ),
                    "dest": ENCRYPTION_CONFIG,
                    "mode": "0600",
                },
            },
            {
                # public; until the second-target step has made it, the archive's timer skips
                "name": f"Install {HOST_RECIPIENT}, the PKI archive's recipient (PKI_RECIPIENT)",
                "when": "sitegen_control_plane and sitegen_pki_recipient | length > 0",
                "tags": [PKI_RECIPIENT_TAG],
                "ansible.builtin.copy": {
                    "content": "{{ sitegen_pki_recipient }}\n",
                    "dest": HOST_RECIPIENT,
                    "mode": "0644",
                },
            },
        ],
    }  # fmt: skip


def playbook() -> list[dict[str, Any]]:
    # one object in both plays that use it, so the YAML holds it once (an anchor and its alias)
    directory = {
        "name": "Make the folder of the scripts",
        "ansible.builtin.file": {"path": HOST_SCRIPTS, "state": "directory", "mode": "0700"},
    }
    return [
        _baseline_play(directory),
        _mirrors_play(),
        _fabric_play(directory),
        _join_files_play(),
    ]


class _Dumper(yaml.SafeDumper):
    """Sequences indented under their key, as yamllint (and so ansible-lint) wants them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _text(body: Any) -> str:
    return "---\n" + yaml.dump(body, Dumper=_Dumper, sort_keys=False, width=10_000)


def ansible_files(site: Site, layout: VariantLayout) -> list[OutputFile]:
    folder = paths.ansible_dir(layout.name)
    run = f"ansible-playbook -i {INVENTORY} {PLAYBOOK} -e sitegen_hosts=<group or host>"
    return [
        OutputFile(
            folder / INVENTORY, [],
            f"Every host of {layout.name}, grouped by cluster and pool (<cluster>_<pool>); ansible_host is its\n"
            "Kubernetes-plane address (override in host_vars to reach it over the management plane).",
            text=_text(inventory(site, layout)),
        ),
        OutputFile(
            folder / PLAYBOOK, [],
            f"The RUNBOOK's per-host steps, pool by pool: {run}\n"
            "(ENCRYPTION_KEY, and PKI_RECIPIENT once it exists, in the environment from the vault for the\n"
            "control plane; see the RUNBOOK).",
            text=_text(playbook()),
        ),
    ]  # fmt: skip
