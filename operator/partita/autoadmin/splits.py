"""Splits for size: which partitions of a settled table to cut in two, and where.

DynamoDB splits a partition that grows past 10 GB (seed 000, section 3: "splits for
size"). A partition's leader counts its bytes now and then and reports, with them, the
size-weighted median of its items' key hashes (`PartitionStats.split_hash`,
`storage/table_stats.py`); cutting there leaves half the bytes on each side however
the keys cluster, where the middle of the hash range could leave nearly all of them on
one side. A partition counted without a split point (a node that does not report one)
is cut at the middle of its range.

No cut where none can help: every item under one key hash (one partition key's item
collection, which DynamoDB cannot split either), or a range one hash wide. Nor on an
estimate: a split child's figures are its share of its parent's until its leader counts
it, and cutting on a guess could cut at the wrong place or twice.

Pure: the reconcile core calls `size_cuts` with what it observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from partita.common.partition_map import Partition
from partita.control.model import PartitionStats

# Why a partition over the limit is left whole.
Obstacle = Literal["single_key", "too_narrow"]


@dataclass(frozen=True)
class Cut:
    """Cut `partition` into [start, at) and [at, end); `left_share` of its items and
    bytes are expected on the left (a half at the median; the range's share at the
    middle, keys hashing uniformly)."""

    partition: Partition
    at: int
    left_share: float


@dataclass(frozen=True)
class Blocked:
    partition_id: str
    obstacle: Obstacle


def size_cuts(
    partitions: Sequence[Partition], stats: Mapping[str, PartitionStats], limit: int
) -> tuple[list[Cut], list[Blocked]]:
    """The cuts due for partitions whose measured size passes `limit` bytes, and the
    partitions over it that no cut can help."""
    cuts: list[Cut] = []
    blocked: list[Blocked] = []
    for p in partitions:
        counted = stats.get(p.partition_id)
        if counted is None or counted.estimated or counted.size_bytes <= limit:
            continue
        if counted.single_key:
            blocked.append(Blocked(p.partition_id, "single_key"))
            continue
        cut = cut_point(p, counted.split_hash)
        if cut is None:
            blocked.append(Blocked(p.partition_id, "too_narrow"))
        else:
            cuts.append(cut)
    return cuts, blocked


def cut_point(p: Partition, split_hash: int | None) -> Cut | None:
    """At the reported split hash if it lies strictly inside the range, else the middle."""
    if split_hash is not None and p.start < split_hash < p.end:
        return Cut(p, split_hash, 0.5)
    if p.end - p.start < 2:
        return None
    middle = p.start + (p.end - p.start) // 2
    return Cut(p, middle, (middle - p.start) / (p.end - p.start))


def oversized(stats: Mapping[str, PartitionStats], limit: int) -> bool:
    """Whether any measured partition passes the limit: the local driver reads a settled
    table's partitions only then."""
    return any(not s.estimated and s.size_bytes > limit for s in stats.values())
