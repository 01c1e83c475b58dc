"""Splits for size and for consumption: which partitions of a settled table to cut in
two, and where.

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

Split for consumption (seed 000, section 4): a partition whose consumed throughput
has stayed at or above a share of its allocation for `hot_seconds` (its leader judges
each window, `storage/heat.py`) is cut at its key distribution point, the median key
hash of the consumed capacity, so each child takes about half the load. Not when one
key carries most of that load: the hot key's child would be as hot as the parent, so
the split would not help (DynamoDB does not split then either); and never at the
middle of the range, which says nothing about where the load is.

A replicated partition is cut only where the storage nodes split its group at a log
index (`replicated_ok`: the local cluster and the Kubernetes operator with replication;
`reconcile.MarkSplit`, `storage/group_split.py`): cut in place, its children would start
fresh groups from whatever each replica had applied, and a lagging replica would miss
acknowledged writes for good. Elsewhere (nodes that run no groups) it is kept whole
(`replicated`), for throughput as well.

Pure: the reconcile core calls `size_cuts` and `consumption_cuts` with what it observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from partita.common import config
from partita.common.partition_map import Partition, is_replicated
from partita.control.model import PartitionStats

# Why a partition due a split is left whole: all its bytes under one key hash, a range
# one hash wide, its hot load on one key, no distribution point inside its range, or
# several replicas (see above).
Obstacle = Literal["single_key", "too_narrow", "single_hot_key", "no_hot_point", "replicated"]
# What an operator reads for each obstacle (log lines, Kubernetes events).
KEPT_WHOLE_BECAUSE: dict[Obstacle, str] = {
    "single_key": "every item has one partition key",
    "too_narrow": "its range is one hash",
    "single_hot_key": "one key carries most of its load",
    "no_hot_point": "its load has no distribution point inside its range",
    "replicated": "it has several replicas, and these storage nodes do not split replication groups",
}
# How long a partition must have run hot before it is split for consumption.
DEFAULT_HOT_SECONDS = config.DEFAULT_SPLIT_HOT_SECONDS


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
    partitions: Sequence[Partition],
    stats: Mapping[str, PartitionStats],
    limit: int,
    replicated_ok: bool = False,
) -> tuple[list[Cut], list[Blocked]]:
    """The cuts due for partitions whose measured size passes `limit` bytes, and the
    partitions over it that no cut can help (`replicated_ok`: the nodes split groups at
    a log index, so a replicated partition may be cut)."""
    cuts: list[Cut] = []
    blocked: list[Blocked] = []
    for p in partitions:
        counted = stats.get(p.partition_id)
        if counted is None or counted.estimated or counted.size_bytes <= limit:
            continue
        if is_replicated(p) and not replicated_ok:
            blocked.append(Blocked(p.partition_id, "replicated"))
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


def consumption_cuts(
    partitions: Sequence[Partition],
    stats: Mapping[str, PartitionStats],
    hot_seconds: float,
    skip: frozenset[str] = frozenset(),
    replicated_ok: bool = False,
) -> tuple[list[Cut], list[Blocked]]:
    """The cuts due for partitions hot for at least `hot_seconds` (but those in `skip`,
    already cut for size), and the hot partitions no cut can help."""
    cuts: list[Cut] = []
    blocked: list[Blocked] = []
    for p in partitions:
        counted = stats.get(p.partition_id)
        if (
            p.partition_id in skip
            or counted is None
            or counted.estimated
            or counted.hot_seconds < hot_seconds
        ):
            continue
        at = counted.hot_split_hash
        if is_replicated(p) and not replicated_ok:
            blocked.append(Blocked(p.partition_id, "replicated"))
        elif counted.hot_single_key:
            blocked.append(Blocked(p.partition_id, "single_hot_key"))
        elif at is None or not p.start < at < p.end:
            blocked.append(Blocked(p.partition_id, "no_hot_point"))
        else:
            # The data's share on each side is unknown: estimate it by the range's.
            cuts.append(Cut(p, at, (at - p.start) / (p.end - p.start)))
    return cuts, blocked


def due(stats: Mapping[str, PartitionStats], limit: int, hot_seconds: float) -> bool:
    """Whether any measured partition passes the size limit or has run hot long enough:
    the local driver reads a settled table's partitions only then."""
    return any(
        not s.estimated and (s.size_bytes > limit or s.hot_seconds >= hot_seconds) for s in stats.values()
    )
