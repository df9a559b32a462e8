"""How many nodes of each pool may be down at once without breaking what the site promises, computed
from the model (issue 15's maintenance budgets).

- control plane: etcd keeps quorum with floor((n - 1) / 2) members down;
- AIStor: a server holds `per_server` drives of each erasure set it is in (sets spread symmetrically
  over the servers); a set keeps reading and writing while at most `parity` of its drives are gone, and
  maintenance spends all but one drive of that parity (a drive may fail while servers are down), or,
  where the parity covers only one server's drives, all of it (said in the budget's reason);
- GPU: the model servers keep their nodes (one per replica), the rest may go; the acceptance job,
  which needs every node, runs only on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

from sitegen.model.erasure import MAX_EXPLICIT_SET as MAX_SET
from sitegen.model.erasure import ErasureLayout, erasure_layout, symmetric_set_sizes


@dataclass(frozen=True)
class Budget:
    pool: str
    nodes: int
    down: int  # may be down at once
    why: str


def etcd_budget(pool: str, members: int) -> Budget:
    quorum = members // 2 + 1
    return Budget(pool, members, members - quorum, f"etcd quorum {quorum} of {members}")


def drives_per_server_per_set(layout: ErasureLayout, servers: int) -> int:
    """A set's drives on one server: one when the set spans that many servers, more when it is wider."""
    return layout.set_size // servers if layout.set_size % servers == 0 else 1


DEFAULT_DRIVE_MARGIN = 2  # parity kept for drives that fail while servers are down for maintenance


def aistor_budget(
    pool: str, servers: int, layout: ErasureLayout, margin: int = DEFAULT_DRIVE_MARGIN
) -> Budget:
    per_server = drives_per_server_per_set(layout, servers)
    layout_why = (
        f"EC:{layout.parity} over {layout.set_size}-drive sets, {per_server} drive(s) of a set per server"
    )
    with_margin = max(layout.parity - margin, 0) // per_server
    if with_margin:
        return Budget(
            pool, servers, with_margin, f"{layout_why}, {margin} drive(s) of parity kept for failures"
        )
    # the parity covers one server's drives and no more: maintenance spends all of it
    return Budget(
        pool, servers, layout.parity // per_server, f"{layout_why}, no parity left for a failure meanwhile"
    )


def gpu_budget(pool: str, nodes: int, serving_nodes: int) -> Budget:
    return Budget(
        pool, nodes, max(nodes - serving_nodes, 0), f"{serving_nodes} node(s) kept for the model servers"
    )


def servers_down_tolerated(
    servers: int, drives_per_server: int, set_size: int | None, parity: int
) -> int | None:
    """Servers of a new server pool that may be down at once (its erasure sets keep quorum), or None
    when its drives form no symmetric set."""
    drives = servers * drives_per_server
    if set_size is None and not symmetric_set_sizes(servers, drives):
        return None
    if set_size is not None and drives % set_size:
        return None
    layout = erasure_layout(
        servers=servers, drives_per_server=drives_per_server, drive_gb=1, set_size=set_size, parity=parity
    )
    if layout.parity > layout.set_size // 2:
        return None
    return layout.parity // drives_per_server_per_set(layout, servers)


def smallest_tolerant_pool(
    at_least: int, drives_per_server: int, set_size: int | None, parity: int
) -> int | None:
    """The fewest servers (at least `at_least`) of a server pool that tolerates one server down; None
    if none does (parity 0, or no pool up to a set of one drive per server beyond the widest set)."""
    for servers in range(max(at_least, 1), max(at_least, 1) + 4 * MAX_SET + 1):
        if servers_down_tolerated(servers, drives_per_server, set_size, parity):
            return servers
    return None
