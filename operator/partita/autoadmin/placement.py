"""Where a new table's partitions go.

P1 places one replica per partition, round-robin over the registered storage nodes
from an offset drawn from the table's seed, so tables do not all start on the same
node. Shuffle-sharded, zone-aware placement with replicas replaces this with
replication.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from partita.common import errors
from partita.control.model import NodeRecord


def initial_placement(count: int, nodes: Sequence[NodeRecord], seed: int) -> list[tuple[str, ...]]:
    """Replica node ids for each of `count` partitions."""
    if not nodes:
        raise errors.service_unavailable("No storage nodes are registered")
    ordered = sorted(nodes, key=lambda n: n.node_id)
    offset = random.Random(seed).randrange(len(ordered))
    return [(ordered[(offset + i) % len(ordered)].node_id,) for i in range(count)]
