"""Scripts the site ships, run as shipped: a CronJob that calls the API server with curl (its container
a `/bin/sh -c` script, `API_SERVER` https://kubernetes.default.svc) runs once the cluster is up, with
/bin/sh and the real curl, against a loopback API server that answers as kube-apiserver does
(apiserver.py: TLS with the cluster CA, pretty-printed JSON for curl, merge patches that never create)
and serves the cluster's Nodes as the simulation has them. The script is the one in dist/, the list it
reads the one its ConfigMap mounts; a non-zero exit is a blocker with what the script printed.

A line list is sampled: its first line for each distinct remainder after the first word (one host per
pool and label set), so the run stays short. Needs /bin/sh, curl and openssl on the machine: without
them the Job is listed as assumed, not run.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sitegen.check.bringup.apiserver import fake_apiserver, node
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.objects import key_of

IN_CLUSTER_API = "https://kubernetes.default.svc"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
TOOLS = ("curl", "openssl")


def api_jobs(cluster: Cluster) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(CronJob, container) for each container that runs a shell script against the cluster's API."""
    found = []
    for _, applied in cluster.of_kind("CronJob"):
        spec = (((applied.body.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}).get("template")
        for container in ((spec or {}).get("spec") or {}).get("containers") or []:
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


def _mounted_files(
    cluster: Cluster, job: Mapping[str, Any], container: Mapping[str, Any], root: Path
) -> dict[str, str]:
    """Each path under a ConfigMap mount the container reads, as a file under `root` (sampled)."""
    volumes = {
        v["name"]: v for v in ((job["spec"]["jobTemplate"]["spec"]["template"]["spec"]).get("volumes") or [])
    }
    namespace = job["metadata"].get("namespace", "")
    out = {}
    for mount in container.get("volumeMounts") or []:
        config_map = (volumes.get(mount["name"]) or {}).get("configMap")
        if not config_map:
            continue
        applied = cluster.find("ConfigMap", namespace, config_map["name"])
        for key, value in ((applied.body.get("data") if applied else None) or {}).items():
            target = root / mount["name"] / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_sampled(str(value)))
            out[f"{mount['mountPath'].rstrip('/')}/{key}"] = str(target)
    return out


def run_api_jobs(cluster: Cluster) -> list[tuple[str, str, str]]:
    """Run each API-calling CronJob once: (job, owner, what failed) for each that exits non-zero."""
    jobs = api_jobs(cluster)
    if not jobs:
        return []
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing or not Path("/bin/sh").exists():
        for job, _ in jobs:
            cluster.assumed.add(
                f"CronJob {job['metadata'].get('namespace')}/{job['metadata']['name']}: not run "
                f"({', '.join(missing) or '/bin/sh'} not found here), assumed to work"
            )
        return []
    failed = []
    with tempfile.TemporaryDirectory(prefix="sitegen-scripts-") as folder:
        root = Path(folder)
        with fake_apiserver(root / "api") as api:
            api.nodes = {
                n.name: node(
                    n.name,
                    labels=dict(n.labels),
                    taints=[
                        {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                        for t in n.taints
                    ],
                )
                for n in cluster.nodes.values()
            }
            for job, container in jobs:
                ref = f"CronJob {job['metadata'].get('namespace')}/{job['metadata']['name']}"
                owner = cluster.objects[key_of(job)].owner
                work = root / job["metadata"]["name"]
                (work / "sa").mkdir(parents=True)
                (work / "sa" / "token").write_text(api.token)
                shutil.copyfile(api.ca, work / "sa" / "ca.crt")
                files = _mounted_files(cluster, job, container, work)
                env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(work)}
                for item in container.get("env") or []:
                    value = str(item.get("value", ""))
                    value = files.get(value, value)
                    env[item["name"]] = {IN_CLUSTER_API: api.url, SERVICE_ACCOUNT: str(work / "sa")}.get(
                        value, value
                    )
                done = subprocess.run(
                    ["/bin/sh", "-c", container["command"][2]],
                    env=env, capture_output=True, text=True, check=False, timeout=60,
                )  # fmt: skip
                if done.returncode != 0:
                    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
                    failed.append((ref, owner, f"exits {done.returncode} as shipped: {'; '.join(said[-3:])}"))
                else:
                    cluster.log.append((owner, f"{ref} ran as shipped: {done.stdout.strip()}"))
    return failed
