"""Addresses and names that running clients and hosts hold: synth compares what it is about to write with
the dist/ it replaces (what Argo CD and the hosts run) and refuses, until `gitops.yaml`
`acknowledged_moves` lists it, a change that moves one of them:

- a load-balancer address pinned on a Service or a gateway (`lbipam.cilium.io/ips`): clients and DNS
  records hold it (the S3 front doors, the gateway);
- a CiliumLoadBalancerIPPool that no longer holds an address it held: Cilium's LB-IPAM takes an
  address out of a Service whose pool stopped covering it and gives it another;
- a rail's nv-ipam IPPool subnet or per-node block size: every node's IPoIB block on that rail is
  recomputed, and pods on the rail are readdressed;
- the API server's endpoint, the names its certificate holds, the cluster's name, DNS domain and pod or
  Service subnets (kubeadm's ClusterConfiguration): kubeadm set them at init, so the RUNBOOK would have
  to re-issue the API server certificates and every kubeconfig on running hosts, or rebuild.

An address that is new (a pool grown, a front door added) moves nothing. Each refusal prints the entry
that acknowledges it: `<variant>/<cluster> <what>: <before> -> <after>`, so an acknowledgment holds for
that move only. Once synthesized, an entry matches nothing and may be removed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from ipaddress import IPv4Address, ip_network
from pathlib import Path, PurePosixPath
from typing import Any

from sitegen.model import ConfigError, Site
from sitegen.model.paths import APPS, KUBEADM, DistPath
from sitegen.tree.documents import documents
from sitegen.tree.fields import dig

PINNED = "lbipam.cilium.io/ips"
# bytes that a file holding an address or name of the list above contains
_MARKERS = (
    PINNED.encode(),
    b"kind: CiliumLoadBalancerIPPool",
    b"kind: IPPool",
    b"kind: ClusterConfiguration",
)

Moves = Callable[[str, str], bool]  # (before, after) -> whether live clients or hosts are disturbed


def _changed(before: str, after: str) -> bool:
    return before != after


def _ranges(text: str) -> list[tuple[int, int]]:
    """Address ranges of a pool's blocks, as written by `_pool_blocks`."""
    out = []
    for block in text.split(", "):
        if "-" in block:
            start, stop = block.split("-")
            out.append((int(IPv4Address(start)), int(IPv4Address(stop))))
        elif block:
            net = ip_network(block, strict=False)
            out.append((int(net.network_address), int(net.broadcast_address)))
    return sorted(out)


def _shrunk(before: str, after: str) -> bool:
    """Some address of the pool before is in no block of the pool after."""
    kept = _merged(_ranges(after))
    return any(not any(lo <= start and stop <= hi for lo, hi in kept) for start, stop in _ranges(before))


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, stop in ranges:
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def _pool_blocks(spec: Mapping[str, Any]) -> str:
    blocks = spec.get("blocks") or []
    return ", ".join(b["cidr"] if "cidr" in b else f"{b['start']}-{b['stop']}" for b in blocks)


def _pinned(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == PINNED:
                yield path or "metadata.annotations", str(value)
            else:
                yield from _pinned(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for item in node:
            yield from _pinned(item, path)


def held(doc: Mapping[str, Any]) -> Iterator[tuple[str, str, Moves]]:
    """What of the object running clients or hosts hold: (what, value, whether a change moves it)."""
    kind, meta = doc.get("kind"), doc.get("metadata") or {}
    ns = meta.get("namespace")
    ref = f"{kind} {ns + '/' if ns else ''}{meta.get('name', '')}"
    for path, address in _pinned(doc):
        where = "" if path == "metadata.annotations" else f" ({path})"
        yield f"{ref} address{where}", address, _changed
    spec = doc.get("spec") or {}
    if kind == "CiliumLoadBalancerIPPool":
        yield f"{ref} addresses", _pool_blocks(spec), _shrunk
    if kind == "IPPool" and "subnet" in spec:
        yield f"{ref} subnet", str(spec["subnet"]), _changed
        yield f"{ref} perNodeBlockSize", str(spec.get("perNodeBlockSize")), _changed
    if kind == "ClusterConfiguration":
        networking = doc.get("networking") or {}
        yield "API server endpoint", str(doc.get("controlPlaneEndpoint")), _changed
        yield (
            "API server certificate names",
            ", ".join(dig(doc, "apiServer", "certSANs") or []),
            _changed,
        )
        yield "cluster name", str(doc.get("clusterName")), _changed
        for field in ("dnsDomain", "podSubnet", "serviceSubnet"):
            yield f"cluster {field}", str(networking.get(field)), _changed


def _cluster_of(path: PurePosixPath) -> str | None:
    """`<variant>/<cluster>` of a file of an app's or a cluster's kubeadm folder."""
    where = DistPath(path)
    return f"{where.variant}/{where.cluster}" if where.area in (APPS, KUBEADM) and where.cluster else None


def _may_hold(path: PurePosixPath, data: bytes) -> bool:
    return path.name.endswith(".yaml") and any(m in data for m in _MARKERS)


def addresses(files: Mapping[PurePosixPath, bytes]) -> dict[tuple[str, str], tuple[str, Moves]]:
    """(cluster, what) -> (value, its rule) of every file that holds one."""
    found: dict[tuple[str, str], tuple[str, Moves]] = {}
    for path, data in files.items():
        cluster = _cluster_of(path)
        if cluster is None or not _may_hold(path, data):
            continue
        for doc in documents(path, data):
            if not doc.wrapped:
                for what, value, rule in held(doc.body):
                    found[(cluster, what)] = (value, rule)
    return found


def moves(rendered: Mapping[PurePosixPath, bytes], out_dir: Path) -> list[str]:
    """Each move of a held address or name from the dist/ in `out_dir` to `rendered`, as the entry that
    acknowledges it."""
    # A held value is compared with the one the same object holds after, and an object's file is named by
    # its kind and name: the files that will hold none are not read (they were most of 45 MB).
    paths = [
        p
        for p, data in rendered.items()
        if _cluster_of(p) is not None and _may_hold(p, data) and (out_dir / p).is_file()
    ]
    before = addresses({p: (out_dir / p).read_bytes() for p in paths})
    after = addresses(rendered)
    found = []
    for (cluster, what), (old, rule) in sorted(before.items()):
        now = after.get((cluster, what))
        if now is not None and rule(old, now[0]):
            found.append(f"{cluster} {what}: {old} -> {now[0]}")
    return found


def check_moves(site: Site, rendered: Mapping[PurePosixPath, bytes], out_dir: Path) -> None:
    """Raise ConfigError on a move of a held address or name that `acknowledged_moves` does not list."""
    unlisted = [m for m in moves(rendered, out_dir) if m not in site.gitops.acknowledged_moves]
    if unlisted:
        shown = "; ".join(f"'{m}'" for m in unlisted[:2])
        more = f" and {len(unlisted) - 2} more" if len(unlisted) > 2 else ""
        raise ConfigError(
            ("gitops", "acknowledged_moves"),
            f"{len(unlisted)} live addresses or names would move: {shown}{more}; clients, DNS records or "
            "hosts hold them: keep them, or list each move here (`sitegen synth --show-moves` prints the entries)",
        )
