"""The runbook's commands against the site's services: the MinIO client (`mc`: an alias names an S3
endpoint, every other command needs that endpoint to answer; a consumer's key needs a policy that
grants nothing that unlocks or administers) and the vault CLI (policies, auth mounts and roles, keys).
"""

from __future__ import annotations

import json
import re

from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.events import Blocker, Stop
from sitegen.check.bringup.objects import Applied, Key
from sitegen.check.bringup.state import SimulationState
from sitegen.tree.fields import dig

# What no consumer's key may do: lift a lock, erase a version, change a bucket's protection or policy
FORBIDDEN_S3_ACTIONS = {
    "s3:BypassGovernanceRetention",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutObjectRetention",
    "s3:PutBucketPolicy",
    "s3:DeleteBucket",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketVersioning",
    "s3:DeleteObjectVersion",  # a version deleted for good: versioning kept nothing
}


def mc_command(state: SimulationState, cluster: Cluster | None, args: list[str]) -> None:
    """The MinIO client: `alias set` names an S3 endpoint; every other command needs that endpoint
    to answer, i.e. an ObjectStore that serves the name with every server pool up."""
    if args[:2] == ["alias", "set"]:
        state.mc_aliases[args[2]] = args[3].removeprefix("https://").split("/")[0]
        return
    words = [a for a in args if not a.startswith("-")]
    alias = next((w.split("/")[0] for w in words[1:] if w.split("/")[0] in state.mc_aliases), None)
    if alias is None:
        named = next((w.split("/")[0] for w in words[1:] if "/" in w), words[-1] if words else "")
        raise state.blocked(
            cluster.name if cluster else "-",
            "mc",
            f"`mc {' '.join(args[:3])}`: no alias {named!r} (the runbook never runs `mc alias set`)",
        )
    host = state.mc_aliases[alias]
    if args[:3] == ["admin", "user", "svcacct"] and "add" in args:
        _key_policy(state, cluster, args)
    store = _object_store(state, host)
    why = _s3_blocker(store)
    if why:
        raise state.blocked(
            cluster.name if cluster else "-", "mc", f"`mc {' '.join(args[:3])}`: {host}: {why}"
        )
    signer = store[0].name if store else None  # its cluster's CA signed the store's certificate
    if signer is not None and signer not in state.mc_trusted:
        raise state.blocked(
            cluster.name if cluster else "-", "mc",
            f"`mc {' '.join(args[:3])}`: {host}: x509: certificate signed by unknown authority (the "
            f"ObjectStore's certificate is signed by the CA of cluster {signer}, which mc trusts only in its "
            "certs/CAs folder; the system's CAs do not hold it)",
        )  # fmt: skip


def _key_policy(state: SimulationState, cluster: Cluster | None, args: list[str]) -> None:
    """A consumer's key is limited by its policy (without one it holds the root's rights): the
    policy must be there and grant nothing that unlocks or administers."""
    name = args[args.index("--name") + 1] if "--name" in args else "?"
    where = cluster.name if cluster else "-"
    if "--policy" not in args:
        raise Stop(
            Blocker(
                where,
                state.step,
                f"S3 key {name}",
                "created without --policy: it holds every right of the root",
            )
        )
    found = state.repo_path(args[args.index("--policy") + 1])
    text = state.texts.get(found)
    if text is None:
        raise state.blocked(where, f"S3 key {name}", f"its policy {found} is not in dist/")
    actions = {a for s in json.loads(text).get("Statement", []) for a in s.get("Action", [])}
    forbidden = sorted(
        a for a in actions if a in FORBIDDEN_S3_ACTIONS or a.endswith("*") or a.startswith("admin:")
    )
    if forbidden:
        raise state.blocked(where, f"S3 key {name}", f"its policy grants {', '.join(forbidden)}")


def _object_store(state: SimulationState, host: str) -> tuple[Cluster, Key, Applied] | None:
    """The ObjectStore whose certificate names `host`, and its cluster (whose CA signed it)."""
    for cluster in state.clusters.values():
        for key, applied in cluster.of_kind("ObjectStore"):
            if host in (dig(applied.body, "spec", "certificates", "config", "dnsNames") or []):
                return cluster, key, applied
    return None


def _s3_blocker(store: tuple[Cluster, Key, Applied] | None) -> str | None:
    """Why S3 does not answer at the store's name from outside its cluster (None: it does)."""
    if store is None:
        return "no ObjectStore of the variant serves this name"
    cluster, key, applied = store
    service = dig(applied.body, "spec", "services", "minio", "serviceType")
    if service != "LoadBalancer":
        return f"the ObjectStore's S3 Service is {service}: nothing outside cluster {cluster.name} reaches it"
    down = cluster.operators.controller_status(applied.body)
    if down.get("currentState") != "Initialized":
        status = down.get("currentState", "no status: the AIStor operator is not running")
        return f"S3 does not answer yet (ObjectStore {key[2]}/{key[3]}: {status})"
    return cluster.node_agents.load_balancer_blocker()


def vault_command(state: SimulationState, args: list[str], heredoc: list[str]) -> None:
    """The vault CLI: policies, auth mounts and roles, and keys written with their properties."""
    if args[:2] == ["policy", "write"]:
        state.vault.policies[args[2]] = set(re.findall(r'path "[\w-]+/data/([\w./-]+)"', "\n".join(heredoc)))
    elif args[:1] == ["write"] and args[1].startswith("auth/") and args[1].endswith("/config"):
        mount = args[1].removeprefix("auth/").removesuffix("/config")
        state.vault.mounts[mount] = dict(a.split("=", 1) for a in args[2:] if "=" in a)
    elif args[:1] == ["write"] and args[1].startswith("auth/") and "/role/" in args[1]:
        mount, _, role = args[1].removeprefix("auth/").partition("/role/")
        state.vault.roles[(mount, role)] = dict(a.split("=", 1) for a in args[2:] if "=" in a)
    elif args[:2] in (["kv", "put"], ["kv", "patch"]):
        state.vault.write(args[1], [a for a in args[2:] if not a.startswith("-")])
