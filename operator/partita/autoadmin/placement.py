"""Where a new table's partitions go.

Each partition gets `replication_factor` replicas on distinct nodes, in distinct zones
while there are zones left, round-robin over the registered storage nodes from an offset
drawn from the table's seed, so tables do not all start on the same node and the first
replicas (the preferred leaders) spread over the nodes. Shuffle sharding is later work.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from partita.common import errors
from partita.control.model import NodeRecord


def initial_placement(
    count: int, nodes: Sequence[NodeRecord], seed: int, replication_factor: int = 1
) -> list[tuple[str, ...]]:
    """Replica node ids for each of `count` partitions."""
    if not nodes:
        raise errors.service_unavailable("No storage nodes are registered")
    if len(nodes) < replication_factor:
        raise errors.service_unavailable(
            f"{len(nodes)} storage nodes are registered; {replication_factor} replicas need as many"
        )
    ordered = sorted(nodes, key=lambda n: n.node_id)
    offset = random.Random(seed).randrange(len(ordered))
    return [_replicas(ordered, offset + i, replication_factor) for i in range(count)]


def replicated_placement(
    replication_factor: int,
) -> Callable[[int, Sequence[NodeRecord], int], list[tuple[str, ...]]]:
    """The local cluster's placement with `replication_factor` replicas per partition."""

    def place(count: int, nodes: Sequence[NodeRecord], seed: int) -> list[tuple[str, ...]]:
        return initial_placement(count, nodes, seed, replication_factor)

    return place


def _replicas(ordered: list[NodeRecord], start: int, replication_factor: int) -> tuple[str, ...]:
    """`replication_factor` nodes from `start` on: new zones first, then any node."""
    ring = [ordered[(start + k) % len(ordered)] for k in range(len(ordered))]
    chosen: list[NodeRecord] = []
    for node in ring:
        if len(chosen) < replication_factor and node.zone not in {c.zone for c in chosen}:
            chosen.append(node)
    for node in ring:
        if len(chosen) < replication_factor and node not in chosen:
            chosen.append(node)
    return tuple(n.node_id for n in chosen)
