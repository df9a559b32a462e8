"""Scripts the site ships, run as shipped: a CronJob that calls the API server with curl (its container
a `/bin/sh -c` script, `API_SERVER` https://kubernetes.default.svc) runs once the cluster is up, with
/bin/sh and the real curl, against a loopback API server that answers as kube-apiserver does
(apiserver.py: TLS with the cluster CA, pretty-printed JSON for curl, merge patches that never create)
and serves the cluster's Nodes, workloads and Certificates as the simulation has them. The script is
the one in dist/, the list it reads the one its ConfigMap mounts; a non-zero exit is a blocker with
what the script printed.

A line list is sampled: its first line for each distinct remainder after the first word (one host per
pool and label set), so the run stays short. Needs /bin/sh, curl and openssl on the machine: without
them the Job is listed as assumed, not run.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs.objects import IN_CLUSTER_API
from constructs.objects import SERVICE_ACCOUNT_DIR as SERVICE_ACCOUNT
from sitegen.check.bringup.apiserver import fake_apiserver, fake_prometheus, node
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.objects import key_of
from sitegen.tree.fields import dig

TOOLS = ("curl", "openssl")


def api_jobs(cluster: Cluster) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(CronJob, container) for each container that runs a shell script against the cluster's API."""
    found = []
    for _, applied in cluster.of_kind("CronJob"):
        spec = dig(applied.body, "spec", "jobTemplate", "spec", "template")
        for container in dig(spec, "spec", "containers") or []:
            env = {e.get("name"): e.get("value") for e in container.get("env") or []}
            command = container.get("command") or []
            if env.get("API_SERVER") == IN_CLUSTER_API and command[:2] == ["/bin/sh", "-c"]:
                found.append((applied.body, container))
    return found


def _sampled(text: str) -> str:
    seen: dict[str, str] = {}
    for line in text.splitlines():
        _, _, rest = line.strip().partition(" ")
        seen.setdefault(rest, line)
    return "".join(f"{line}\n" for line in seen.values())


def _pod_files(
    cluster: Cluster,
    namespace: str,
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    root: Path,
    *,
    sampled: bool,
) -> dict[str, str]:
    """The container's ConfigMap mounts as files under `root`: in-pod path (the mount's directory and
    each key's file, or a subPath's file) -> local path. `sampled`: line lists cut to a sample."""
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    out = {}
    for mount in container.get("volumeMounts") or []:
        config_map = dig(volumes, mount["name"], "configMap")
        if not config_map:
            continue
        applied = cluster.find("ConfigMap", namespace, config_map["name"])
        folder = root / mount["name"]
        for key, value in ((applied.body.get("data") if applied else None) or {}).items():
            target = folder / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_sampled(str(value)) if sampled else str(value))
            if mount.get("subPath") == key:
                out[mount["mountPath"]] = str(target)
            elif not mount.get("subPath"):
                out[f"{mount['mountPath'].rstrip('/')}/{key}"] = str(target)
                out[mount["mountPath"].rstrip("/")] = str(folder)
    return out


UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# What the scripts read besides Nodes: workloads, and Certificates with the status cert-manager writes
# once it issued one (the simulation has no clock: every issued pair carries this time)
SERVED_KINDS = (("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
                ("cert-manager.io", "Certificate"))  # fmt: skip
ISSUED_AT = "2026-01-01T00:00:00Z"


def _api_objects(cluster: Cluster) -> dict[str, dict]:
    """The cluster's objects of SERVED_KINDS by their API path, as the API server returns them."""
    served = {}
    for group, kind in SERVED_KINDS:
        for (_, _, namespace, name), applied in cluster.of_kind(kind):
            body = dict(applied.body)
            if not str(body.get("apiVersion", "")).startswith(f"{group}/"):
                continue
            if kind == "Certificate" and cluster.secrets.certificate_ready(namespace, name):
                body["status"] = {"notBefore": ISSUED_AT}
            resource = cluster.resource_name(group, kind)
            served[f"/apis/{body['apiVersion']}/namespaces/{namespace}/{resource}/{name}"] = body
    return served


def _api_nodes(cluster: Cluster) -> dict[str, dict]:
    """The cluster's Nodes as the API server returns them (a cordoned one unschedulable)."""
    return {
        n.name: node(
            n.name,
            labels=dict(n.labels),
            taints=[
                {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                for t in n.taints
                if t.key != UNSCHEDULABLE
            ],
            unschedulable=any(t.key == UNSCHEDULABLE for t in n.taints),
        )
        for n in cluster.nodes.values()
    }


def _environment(
    container: Mapping[str, Any], files: Mapping[str, str], api_url: str, sa: Path, work: Path
) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(work)}
    for item in container.get("env") or []:
        value = str(item.get("value", ""))
        value = files.get(value, value)
        env[item["name"]] = {IN_CLUSTER_API: api_url, SERVICE_ACCOUNT: str(sa)}.get(value, value)
    return env


def _tools_missing() -> list[str]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return missing if missing or Path("/bin/sh").exists() else ["/bin/sh"]


def _service_account(api: Any, work: Path) -> Path:
    sa = work / "sa"
    sa.mkdir(parents=True)
    (sa / "token").write_text(api.token)
    shutil.copyfile(api.ca, sa / "ca.crt")
    return sa


def run_api_jobs(cluster: Cluster) -> list[tuple[str, str, str]]:
    """Run each API-calling CronJob once: (job, owner, what failed) for each that exits non-zero."""
    jobs = api_jobs(cluster)
    if not jobs:
        return []
    missing = _tools_missing()
    if missing:
        for job, _ in jobs:
            cluster.assumed.add(
                f"CronJob {job['metadata'].get('namespace')}/{job['metadata']['name']}: not run "
                f"({', '.join(missing)} not found here), assumed to work"
            )
        return []
    failed = []
    with tempfile.TemporaryDirectory(prefix="sitegen-scripts-") as folder:
        root = Path(folder)
        with fake_apiserver(root / "api") as api:
            api.nodes = _api_nodes(cluster)
            api.objects = _api_objects(cluster)
            for job, container in jobs:
                ref = f"CronJob {job['metadata'].get('namespace')}/{job['metadata']['name']}"
                owner = cluster.objects[key_of(job)].owner
                work = root / job["metadata"]["name"]
                sa = _service_account(api, work)
                pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
                files = _pod_files(
                    cluster, job["metadata"].get("namespace", ""), pod, container, work, sampled=True
                )
                done = subprocess.run(
                    ["/bin/sh", "-c", container["command"][2]],
                    env=_environment(container, files, api.url, sa, work),
                    capture_output=True, text=True, check=False, timeout=60,
                )  # fmt: skip
                if done.returncode != 0:
                    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
                    failed.append((ref, owner, f"exits {done.returncode} as shipped: {'; '.join(said[-3:])}"))
                else:
                    cluster.log.append((owner, f"{ref} ran as shipped: {done.stdout.strip()}"))
    return failed


@dataclass
class GuardRun:
    """One pass of a Deployment's guard script: its exit, what it printed, the Nodes after it."""

    returncode: int
    output: str
    nodes: dict[str, dict]


def run_guard_pass(
    cluster: Cluster, deployment: Mapping[str, Any], firing: Mapping[str, list[str]]
) -> GuardRun | None:
    """The GPU node guard's script (its Deployment's container, as shipped), one pass (`once`), against
    the API server stand-in with the cluster's Nodes and a Prometheus stand-in whose queries (the
    guard's conditions, by reason) name the `firing` nodes. None without sh, curl or openssl."""
    if _tools_missing():
        return None
    namespace = deployment["metadata"].get("namespace", "")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    with tempfile.TemporaryDirectory(prefix="sitegen-guard-") as folder:
        work = Path(folder)
        with fake_apiserver(work / "api") as api:
            api.nodes = _api_nodes(cluster)
            sa = _service_account(api, work)
            files = _pod_files(cluster, namespace, pod, container, work, sampled=False)
            conditions = Path(files.get(next(
                (str(e["value"]) for e in container.get("env") or [] if e["name"] == "CONDITIONS"), ""), ""))  # fmt: skip
            answers = {
                (conditions / reason).read_text(): nodes
                for reason, nodes in firing.items()
                if (conditions / reason).is_file()
            }
            answers.update({
                f.read_text(): [] for f in sorted(conditions.glob("*")) if f.read_text() not in answers
            })  # fmt: skip
            with fake_prometheus(answers) as prometheus:
                env = _environment(container, files, api.url, sa, work)
                env.update(
                    {"API": api.url, "SA": str(sa), "PROMETHEUS": prometheus, "ALIVE": str(work / "alive")}
                )
                script = files[container["command"][1]]
                done = subprocess.run(
                    ["/bin/sh", script, "once"],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=60,
                )
            return GuardRun(done.returncode, (done.stdout + done.stderr).strip(), api.nodes)
