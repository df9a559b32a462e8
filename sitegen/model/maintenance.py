"""How many nodes of each pool may be down at once without breaking what the site promises, computed
from the model (issue 15's maintenance budgets).

- control plane: etcd keeps quorum with floor((n - 1) / 2) members down;
- AIStor: a server holds `per_server` drives of each erasure set it is in (sets spread symmetrically
  over the servers); a set keeps reading and writing while at most `parity` of its drives are gone;
- GPU: the model servers keep their nodes (one per replica), the rest may go; the acceptance job,
  which needs every node, runs only on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

from sitegen.model.erasure import ErasureLayout


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


def aistor_budget(pool: str, servers: int, layout: ErasureLayout) -> Budget:
    per_server = drives_per_server_per_set(layout, servers)
    down = layout.parity // per_server
    return Budget(
        pool,
        servers,
        down,
        f"EC:{layout.parity} over {layout.set_size}-drive sets, {per_server} drive(s) of a set per server",
    )


def gpu_budget(pool: str, nodes: int, serving_nodes: int) -> Budget:
    return Budget(
        pool, nodes, max(nodes - serving_nodes, 0), f"{serving_nodes} node(s) kept for the model servers"
    )
