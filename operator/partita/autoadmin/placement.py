"""Where a new table's partitions go.

First the table's shuffle shard (`shuffle_shard`): a node for every replica of every
partition, one per partition in each zone where zones allow, chosen so that it holds at
most `ShardPolicy.max_shared` replicas of any other table's partition, where the fleet
allows. A table that overloads or poisons its nodes then takes down at most one replica
of any other partition (the default), whose group keeps its quorum (DESIGN.md section
6; Route 53's shuffle sharding). Round-robin from a random offset, the placement before
it, exposed 12-20% of the ordered pairs of one-partition tables on three zones of five
to eight nodes (docs/control-plane.md, "Shuffle-sharded placement").

Then, within the shard, each partition gets `replication_factor` replicas on distinct
nodes, in distinct zones while there are zones left, from a ring that takes one node of
each zone in turn (`initial_placement`), so replicas spread over every node of a zone
and the first replicas (the preferred leaders) over the zones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from partita.common import config, errors
from partita.common.shard_bound import sharing
from partita.control.model import NodeRecord


@dataclass(frozen=True)
class ShardPolicy:
    """How a new table's shard is chosen.

    A table's shard is the nodes its partitions' replicas are on: `partitions *
    replicas` nodes, or every node if the fleet has no more, at most `partitions` of
    them in a zone while other zones have room (a zone holds one replica of a partition
    where the fleet allows); a partition split later stays on its replicas. Chosen so
    that it holds at most `max_shared` replicas of any other table's partition, where
    the fleet allows; where it does not, the shard that leaves the fewest partitions
    over that. Off (`enabled` False): the partitions go round-robin over every node from
    the table's seeded offset, as before sharding."""

    max_shared: int = config.DEFAULT_SHARD_MAX_SHARED
    enabled: bool = True
    # Replicas of each partition: the placement's replication factor.
    replicas: int = config.DEFAULT_REPLICATION_FACTOR
    # Shards built (greedily, ties broken by the table's seed) before settling for the
    # best of them.
    attempts: int = 16

    def size(self, nodes: Sequence[NodeRecord], partitions: int) -> int:
        """Nodes in a shard: a node of its own for every replica of every partition, or
        every node if the fleet has no more."""
        return min(len(nodes), max(1, partitions) * max(1, self.replicas))

    def restricts(self, nodes: Sequence[NodeRecord], partitions: int) -> bool:
        """Whether a shard would leave out some node: only then do other tables' shards
        matter (the driver reads them only then)."""
        return self.enabled and self.size(nodes, partitions) < len(nodes)


def shuffle_shard(
    seed: int,
    nodes: Sequence[NodeRecord],
    partitions: int,
    policy: ShardPolicy,
    others: Collection[frozenset[str]] = (),
) -> list[NodeRecord]:
    """The nodes a new table of `partitions` partitions may use, given the replica sets
    of the other tables' partitions (`others`). Deterministic in its inputs: a pass
    repeated after a crash chooses the same shard.

    What a shard must avoid is holding more than `max_shared` replicas of some other
    partition: if the new table then takes its nodes down (a poison request, a hot key
    that starves them), that partition loses them too, and with two of three its quorum.
    Each attempt fills the shard one node at a time with the node that leaves the fewest
    other partitions over the bound, then the fewest replicas of one of them, then the
    fewest in all, ties broken by the seeded draw, a zone new to the shard first until
    it spans `replicas` zones; the first attempt within the bound is taken, else the
    best of them."""
    if not policy.restricts(nodes, partitions):
        return list(nodes)
    holders: dict[str, list[int]] = {}  # node id -> the other partitions with a replica on it
    for index, replicas in enumerate(others):
        for node_id in replicas:
            holders.setdefault(node_id, []).append(index)
    ordered = sorted(nodes, key=lambda n: n.node_id)
    size = policy.size(nodes, partitions)
    rng = random.Random(seed)
    best: tuple[tuple[int, int, int], list[NodeRecord]] | None = None
    for _ in range(max(1, policy.attempts)):
        pool = list(ordered)
        rng.shuffle(pool)
        candidate = _fill(
            pool, size, max(1, partitions), policy.replicas, holders, len(others), policy.max_shared
        )
        score = sharing([node.node_id for node in candidate], others, policy.max_shared)
        if score[0] == 0:
            return candidate
        if best is None or score < best[0]:
            best = (score, candidate)
    assert best is not None
    return best[1]


def _fill(
    pool: list[NodeRecord],
    size: int,
    per_zone: int,
    zones_wanted: int,
    holders: dict[str, list[int]],
    sets: int,
    bound: int,
) -> list[NodeRecord]:
    """One greedy shard of `size` nodes from `pool` (in its drawn order), at most
    `per_zone` of them in a zone while another zone has room."""
    shared = [0] * sets  # replicas of each other partition in the shard so far
    in_zone: dict[str, int] = {}
    over = worst = 0
    chosen: list[NodeRecord] = []

    def cost(k: int) -> tuple[int, int, int, int, int]:
        node = pool[k]
        held = holders.get(node.node_id, ())
        return (
            # A zone new to the shard first, while it spans fewer than `zones_wanted`.
            int(len(in_zone) < zones_wanted and node.zone in in_zone),
            over + sum(1 for r in held if shared[r] == bound),
            max([worst, *(shared[r] + 1 for r in held)]),
            len(held),
            k,
        )

    while len(chosen) < size:
        # Past `per_zone` in a zone only when every zone is: fewer zones than replicas.
        open_ = [k for k, node in enumerate(pool) if in_zone.get(node.zone, 0) < per_zone] or list(
            range(len(pool))
        )
        node = pool.pop(min(open_, key=cost))
        in_zone[node.zone] = in_zone.get(node.zone, 0) + 1
        for r in holders.get(node.node_id, ()):
            shared[r] += 1
            over += shared[r] == bound + 1
            worst = max(worst, shared[r])
        chosen.append(node)
    return chosen


def initial_placement(
    count: int, nodes: Sequence[NodeRecord], seed: int, replication_factor: int = 1
) -> list[tuple[str, ...]]:
    """Replica node ids for each of `count` partitions.

    The nodes form a ring that takes one node of each zone in turn (a0 b0 c0 a1 b1 c1
    ...). Partition i takes `replication_factor` nodes from position `offset + i *
    replication_factor` on, new zones first, so consecutive partitions use the next
    nodes and replicas spread over every node of a zone, not only its first; its first
    replica (the preferred leader) is the (i mod n)-th of those, so leaders rotate over
    the zones too. With one node per zone this is the ring walk from `offset + i`."""
    if not nodes:
        raise errors.service_unavailable("No storage nodes are registered")
    if len(nodes) < replication_factor:
        raise errors.service_unavailable(
            f"{len(nodes)} storage nodes are registered; {replication_factor} replicas need as many"
        )
    ring = _zone_ring(nodes)
    offset = random.Random(seed).randrange(len(ring))
    out = []
    for i in range(count):
        chosen = _replicas(ring, offset + i * replication_factor, replication_factor)
        turn = i % len(chosen)
        out.append(chosen[turn:] + chosen[:turn])
    return out


def _zone_ring(nodes: Sequence[NodeRecord]) -> list[NodeRecord]:
    """Each zone's nodes by id, taken one zone at a time in zone order."""
    by_zone: dict[str, list[NodeRecord]] = {}
    for node in sorted(nodes, key=lambda n: n.node_id):
        by_zone.setdefault(node.zone, []).append(node)
    rows = max(len(members) for members in by_zone.values())
    return [by_zone[zone][row] for row in range(rows) for zone in sorted(by_zone) if row < len(by_zone[zone])]


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
