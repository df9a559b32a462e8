"""What a running site cannot take: synth compares what it is about to write with the dist/ it
replaces (what Argo CD and the hosts run) and refuses, before anything is written, a change that
would disturb it:

- an AIStor server pool resized or re-shaped (servers, drives per server, drive size), or removed:
  erasure sets are fixed when a pool starts, so the site grows by adding a pool;
- a joined host readdressed or renamed: its address is its kubelet's node-ip (and, on the control
  plane, etcd's peer URL), its name the Node's;
- a control-plane member gone that `clusters.yaml` `replaced_members` does not name: its stacked etcd
  member must be moved (the RUNBOOK's steps come with the entry), not dropped;
- an Application gone (a component, tenant or cluster removed or renamed, or its whole variant dropped
  from variants.yaml) that `gitops.yaml` `acknowledged_removals` does not list (as
  `<variant>/<application>`, or `<variant>` for all of a variant's): its ApplicationSet would delete
  it, and its objects would run on unmanaged (or, renamed, be adopted by the new one), which a
  reviewer must see and accept.

Hosts and pools that are new are fine: the RUNBOOK's join steps and Argo CD bring them in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from constructs.argocd import application_name
from sitegen.model import ConfigError, Site
from sitegen.model.paths import APPS, DistPath
from sitegen.tree.documents import documents
from sitegen.tree.fields import dig

# The server-pool fields AIStor fixes at a pool's first start.
SHAPE = {
    "servers": lambda p: p.get("servers"),
    "volumesPerServer": lambda p: p.get("volumesPerServer"),
    "drive size": lambda p: dig(p, "volumeClaimTemplate", "spec", default={}).get("resources", {}),
}
_JOIN_HEADER = re.compile(r"\b([a-z][\w-]*)=(\d+\.\d+\.\d+\.\d+)")


def _object_stores(files: Mapping[PurePosixPath, bytes]) -> dict[PurePosixPath, dict[str, Any]]:
    found = {}
    for path, data in files.items():
        if ".objectstore." in path.name:
            for doc in documents(path, data):
                if doc.kind == "ObjectStore":
                    found[path] = doc.body
    return found


def _hosts(files: Mapping[PurePosixPath, bytes]) -> dict[PurePosixPath, dict[str, tuple[str, bool]]]:
    """Per kubeadm folder: host -> (address, control plane), from the init and join files."""
    found: dict[PurePosixPath, dict[str, tuple[str, bool]]] = {}
    for path, data in files.items():
        if path.parent.parent.name != "kubeadm" or not path.name.startswith(("init-", "join-")):
            continue
        hosts = found.setdefault(path.parent, {})
        control_plane = path.name.startswith(("init-", "join-control-plane-"))
        for doc in documents(path, data):
            registration = doc.body.get("nodeRegistration") or {}
            args = {a["name"]: a["value"] for a in registration.get("kubeletExtraArgs") or []}
            if "node-ip" in args and "$" not in str(registration.get("name", "$")):
                hosts[str(registration["name"])] = (str(args["node-ip"]), control_plane)
        if not control_plane:
            for name, address in _JOIN_HEADER.findall(data.decode()):
                hosts[name] = (address, False)
    return found


def _read(out_dir: Path, paths: list[PurePosixPath]) -> dict[PurePosixPath, bytes]:
    return {p: (out_dir / p).read_bytes() for p in paths if (out_dir / p).is_file()}


def check_growth(
    site: Site, rendered: Mapping[PurePosixPath, bytes], out_dir: Path, whole_site: bool = True
) -> None:
    """Raise ConfigError (naming the config field) for a change the running site cannot take;
    `whole_site`: every variant of variants.yaml is synthesized (not some by --variant)."""
    _check_object_stores(rendered, out_dir)
    _check_hosts(site, rendered, out_dir)
    _check_removals(site, rendered, out_dir, whole_site)


def _app_folders(paths: Iterable[PurePosixPath]) -> set[tuple[str, str, str]]:
    """(variant, cluster, app) of every app folder among `paths` (an Application each)."""
    found = (DistPath(p) for p in paths)
    return {(w.variant, w.cluster, w.app) for w in found if w.cluster is not None and w.app is not None}


def _check_removals(
    site: Site, rendered: Mapping[PurePosixPath, bytes], out_dir: Path, whole_site: bool
) -> None:
    new = _app_folders(rendered)
    variants = {v for v, _, _ in new}
    if whole_site and out_dir.is_dir():  # a variant dropped from variants.yaml goes with all its apps
        variants |= {p.name for p in out_dir.iterdir() if (p / APPS).is_dir()}
    old = {
        (variant, folder.parent.name, folder.name)
        for variant in sorted(variants)
        for folder in sorted((out_dir / variant / APPS).glob("*/*"))
        if folder.is_dir()
    }
    gone = sorted(f"{v}/{application_name(c, a)}" for v, c, a in old - new)
    acknowledged = set(site.gitops.acknowledged_removals)
    unlisted = [g for g in gone if g not in acknowledged and g.split("/")[0] not in acknowledged]
    if unlisted:
        dropped = sorted({g.split("/")[0] for g in unlisted} - {v for v, _, _ in new})
        if dropped:  # a whole variant: one entry stands for its Applications
            raise ConfigError(
                ("gitops", "acknowledged_removals"),
                f"variant {', '.join(dropped)} would go from dist/ with its {len(unlisted)} Applications: "
                "if the site runs it, its ApplicationSets delete them and leave their objects running "
                f"unmanaged; list {', '.join(repr(v) for v in dropped)} here to go on",
            )
        more = f" and {len(unlisted) - 3} more" if len(unlisted) > 3 else ""
        raise ConfigError(
            ("gitops", "acknowledged_removals"),
            f"{len(unlisted)} Applications would go: {', '.join(unlisted[:3])}{more}; their ApplicationSet "
            "deletes each and leaves its objects running unmanaged (`sitegen diff` lists them); list each here "
            "to go on",
        )


def _check_object_stores(rendered: Mapping[PurePosixPath, bytes], out_dir: Path) -> None:
    new = _object_stores(rendered)
    old = _object_stores(_read(out_dir, list(new)))
    for path, before in old.items():
        pools = {p["name"]: p for p in new[path]["spec"].get("pools") or []}
        for i, live in enumerate(before["spec"].get("pools") or []):
            name = live["name"]
            if name not in pools:
                raise ConfigError(
                    ("storage", "aistor", "server_pools"),
                    f"AIStor {name} runs ({path}): a pool leaves only by decommissioning it, not from config",
                )
            for field, value in SHAPE.items():
                if value(live) != value(pools[name]):
                    where = ("servers",) if field == "servers" else ()
                    raise ConfigError(
                        ("storage", "aistor", "server_pools", i, *where),
                        f"AIStor {name} runs with {field} {value(live)} ({path}); a live pool is never "
                        "re-shaped: keep it and add a server pool",
                    )


def _check_hosts(site: Site, rendered: Mapping[PurePosixPath, bytes], out_dir: Path) -> None:
    new = _hosts(rendered)
    paths = [
        PurePosixPath(folder, f.name)
        for folder in new
        if (out_dir / folder).is_dir()
        for f in sorted((out_dir / folder).glob("*.yaml"))
    ]
    old = _hosts(_read(out_dir, paths))
    pool_of = {h.name: name for name, pool in site.pools.items() for h in pool.hosts}
    for folder, joined in old.items():
        now = new.get(folder, {})
        by_address = {address: name for name, (address, _) in now.items()}
        for host, (address, control_plane) in sorted(joined.items()):
            if host in now and now[host][0] != address:
                raise ConfigError(
                    ("pools", pool_of[host], "hosts"),
                    f"{host} joined as {address} ({folder}): a node is not readdressed in place; drain "
                    "and delete it, then join it again under the new address",
                )
            if host not in now and address in by_address:
                renamed = by_address[address]
                raise ConfigError(
                    ("pools", pool_of.get(renamed, "?"), "hosts"),
                    f"{renamed} has {host}'s address ({address}, {folder}): a joined node is not renamed; "
                    "drain and delete it, then join it under the new name",
                )
            cluster = folder.name
            if host not in now and control_plane and host not in site.clusters[cluster].replaced_members:
                raise ConfigError(
                    ("clusters", cluster, "replaced_members"),
                    f"control-plane member {host} of {cluster} is gone ({folder}): name the host taking its "
                    f"place ({host}: <host>); the RUNBOOK then says how it moves (Moving control-plane "
                    "member), `sitegen diff` shows the steps",
                )
