"""The routing map of one table: which partition owns which slice of the hash space.

Immutable and sans-I/O (the shape of aiokafka's cluster metadata): MemDS builds it from
the control store and leadership pushes, routers cache it, and any change produces a
new map with a higher `version`, so a cache keeps whichever of two maps is newer.

Partitions cut [0, 2**64) into contiguous half-open ranges `[start, end)`; a partition
key belongs to the partition whose range holds its `keys.key_hash`. Lookups bisect the
sorted starts, O(log n).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

HASH_SPACE = 1 << 64


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition: hash range `[start, end)` (end is 2**64 for the last one)."""

    partition_id: str
    start: int
    end: int
    replicas: tuple[str, ...] = ()
    leader: str | None = None
    # Members of a replicated partition's group that routers never send to: log-only
    # members (WAL, no data) and full members still being built (snapshot + log
    # catch-up). `replicas` are the full members that serve.
    log_replicas: tuple[str, ...] = ()
    joining: tuple[str, ...] = ()
    # A replicated partition's split at a log index (docs/replication.md): the autoadmin
    # asks for a cut at `split_at` (0: none asked); the group's leader then stops taking
    # writes, commits a SPLIT entry and records its index here (`split_index`, 0 until
    # then). The children name their parent and that index, so a member creates a
    # child's group only once it has applied the parent up to there.
    split_at: int = 0
    split_index: int = 0
    parent: str = ""
    parent_index: int = 0
    # Full members the group keeps (its leader's repair adds or removes members toward
    # it); 0: the storage node's default. Set per Table on Kubernetes (`replicationFactor`).
    replication_factor: int = 0
    # Its group has run with more than one member (Kubernetes: the Partition's
    # `replicationGroup`, set once its replication factor went above 1, never cleared):
    # lowered back to one member it stays a group, whose log a split must respect.
    grouped: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end <= HASH_SPACE:
            raise ValueError(f"partition {self.partition_id}: bad hash range [{self.start}, {self.end})")
        if self.leader is not None and self.leader not in self.replicas:
            raise ValueError(f"partition {self.partition_id}: leader {self.leader} is not a replica")

    def __contains__(self, h: object) -> bool:
        return isinstance(h, int) and self.start <= h < self.end


def is_replicated(partition: Partition) -> bool:
    """Whether a partition is a replication group's: several full members; a
    replication factor above 1 (a single replica being raised to a group); a group
    lowered to one member (`grouped`); or a child of a split at a log index, which
    only groups have. Its split goes through the group's log; a single replica's is cut
    in place."""
    return (
        len(partition.replicas) > 1
        or partition.replication_factor > 1
        or partition.grouped
        or partition.parent_index > 0
    )


def data_members(partition: Partition) -> frozenset[str]:
    """The nodes that hold the partition's data or are being built to: its full members
    and those joining (log-only members hold no data)."""
    return frozenset((*partition.replicas, *partition.joining))


def _check_hash(h: int) -> None:
    if not 0 <= h < HASH_SPACE:
        raise ValueError(f"hash {h} outside [0, 2**64)")


@dataclass(frozen=True, slots=True)
class PartitionMap:
    """A validated, immutable partition map: contiguous, non-overlapping, complete."""

    partitions: tuple[Partition, ...]
    version: int = 0
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __init__(self, partitions: Iterable[Partition], version: int = 0) -> None:
        ordered = tuple(sorted(partitions, key=lambda p: p.start))
        if not ordered:
            raise ValueError("a partition map needs at least one partition")
        if ordered[0].start != 0:
            raise ValueError(f"hash space [0, {ordered[0].start}) has no partition")
        if ordered[-1].end != HASH_SPACE:
            raise ValueError(f"hash space [{ordered[-1].end}, 2**64) has no partition")
        for left, right in itertools.pairwise(ordered):
            if left.end < right.start:
                raise ValueError(f"hash space [{left.end}, {right.start}) has no partition")
            if left.end > right.start:
                raise ValueError(f"partitions {left.partition_id} and {right.partition_id} overlap")
        ids = {p.partition_id for p in ordered}
        if len(ids) != len(ordered):
            raise ValueError("partition ids must be unique")
        object.__setattr__(self, "partitions", ordered)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "_starts", tuple(p.start for p in ordered))

    @classmethod
    def evenly(
        cls,
        partition_ids: Sequence[str],
        *,
        replicas: Sequence[tuple[str, ...]] | None = None,
        version: int = 0,
    ) -> PartitionMap:
        """A map of `len(partition_ids)` equal ranges (a new table's layout)."""
        ranges = split_evenly(len(partition_ids))
        members = replicas if replicas is not None else [()] * len(ranges)
        if len(members) != len(ranges):
            raise ValueError("one replica tuple per partition is needed")
        return cls(
            (
                Partition(pid, start, end, tuple(reps))
                for pid, (start, end), reps in zip(partition_ids, ranges, members, strict=True)
            ),
            version,
        )

    def __len__(self) -> int:
        return len(self.partitions)

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.partitions)

    def floor_lookup(self, h: int) -> Partition:
        """The partition holding hash `h` (the one with the greatest start <= h)."""
        _check_hash(h)
        return self.partitions[bisect.bisect_right(self._starts, h) - 1]

    def ceiling_lookup(self, h: int) -> Partition | None:
        """The partition with the least start >= h, or None if h is past the last start."""
        _check_hash(h)
        i = bisect.bisect_left(self._starts, h)
        return self.partitions[i] if i < len(self.partitions) else None

    def partitions_from(self, h: int) -> Iterator[Partition]:
        """Partitions in hash order, starting with the one that holds `h` (for Scan)."""
        _check_hash(h)
        first = bisect.bisect_right(self._starts, h) - 1
        return iter(self.partitions[first:])

    def by_id(self, partition_id: str) -> Partition:
        for p in self.partitions:
            if p.partition_id == partition_id:
                return p
        raise KeyError(partition_id)

    def with_partition(self, partition: Partition, *, version: int | None = None) -> PartitionMap:
        """A newer map where `partition` replaces the one with the same id and range.

        For membership and leadership changes; splits go through `split`.
        """
        old = self.by_id(partition.partition_id)
        if (old.start, old.end) != (partition.start, partition.end):
            raise ValueError(f"partition {partition.partition_id} changed its range; use split")
        return PartitionMap(
            (partition if p is old else p for p in self.partitions),
            self.version + 1 if version is None else version,
        )

    def split(
        self,
        partition_id: str,
        at: int,
        left_id: str,
        right_id: str,
        *,
        version: int | None = None,
    ) -> PartitionMap:
        """A newer map where one partition becomes [start, at) and [at, end).

        Both children start with the parent's replicas and leader: a split divides one
        replication group in place before any child moves.
        """
        parent = self.by_id(partition_id)
        if not parent.start < at < parent.end:
            raise ValueError(f"split point {at} is not inside partition {partition_id}")
        left = replace(parent, partition_id=left_id, end=at)
        right = replace(parent, partition_id=right_id, start=at)
        children = [p for p in self.partitions if p is not parent] + [left, right]
        return PartitionMap(children, self.version + 1 if version is None else version)


def split_evenly(n: int) -> list[tuple[int, int]]:
    """Cut [0, 2**64) into `n` contiguous ranges whose sizes differ by at most one."""
    if n < 1:
        raise ValueError("need at least one range")
    cuts = [i * HASH_SPACE // n for i in range(n + 1)]
    return list(itertools.pairwise(cuts))


def current_partitions(partitions: Iterable[Partition]) -> list[Partition]:
    """A split parent or its children, never both: the operator creates a split's
    children before it deletes their parent, and once they cover its whole range they
    take its place (until then, one created without the other, the parent stands)."""
    given = list(partitions)
    by_id = {p.partition_id: p for p in given}
    children: dict[str, list[Partition]] = {}
    for p in given:
        if p.parent in by_id:
            children.setdefault(p.parent, []).append(p)
    hidden: set[str] = set()
    for parent_id, kids in children.items():
        parent = by_id[parent_id]
        kids.sort(key=lambda k: k.start)
        covered = kids[0].start == parent.start and kids[-1].end == parent.end
        covered = covered and all(a.end == b.start for a, b in itertools.pairwise(kids))
        hidden |= {parent_id} if covered else {k.partition_id for k in kids}
    return [p for p in given if p.partition_id not in hidden]
