"""The shuffle-shard bound: how many replicas of another table's partition a table's
nodes may hold (docs/control-plane.md, "Shuffle-sharded placement").

A table whose nodes all fail (a poison request, a hot key that starves them) takes down
every replica those nodes hold. If they hold more than `bound` replicas of some other
partition (one of three, by default), that partition loses its quorum with them: it is
*exposed*. The autoadmin keeps a new table's shard within the bound where the fleet
allows; a member added later (repair, a move) that must leave the shard is put where it
exposes the fewest. Pure: the replica sets go in, counts come out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping


def sharing(nodes: Collection[str], others: Iterable[frozenset[str]], bound: int) -> tuple[int, int, int]:
    """(other partitions with more than `bound` replicas on `nodes`, most replicas of one
    of them there, replicas of them all there)."""
    ids = frozenset(nodes)
    shared = [len(ids & replicas) for replicas in others]
    return sum(1 for n in shared if n > bound), max(shared, default=0), sum(shared)


def exposed_partitions(nodes: Collection[str], others: Iterable[frozenset[str]], bound: int) -> int:
    """Other partitions of which `nodes` (a table's) hold more than `bound` replicas:
    those a fault of the table's nodes would take past the bound."""
    return sharing(nodes, others, bound)[0]


def added_exposure(
    shard: Collection[str], candidates: Iterable[str], others: Iterable[frozenset[str]], bound: int
) -> Mapping[str, int]:
    """For each candidate node outside `shard`, how many more other partitions the shard
    with that node added would expose: those with a replica on the candidate and exactly
    `bound` on the shard already. A node of the shard adds nothing."""
    ids = frozenset(shard)
    outside = {c for c in candidates if c not in ids}
    added = dict.fromkeys(outside, 0)
    if not outside:
        return added
    for replicas in others:
        hit = replicas & outside
        if hit and len(ids & replicas) == bound:
            for node in hit:
                added[node] += 1
    return added
