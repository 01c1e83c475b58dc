"""ItemCount and TableSizeBytes: each partition's leader counts its items now and then.

DynamoDB refreshes these figures about every six hours and says recent changes may be
missing; Partita follows the same contract, measuring more often but with a bounded
cost. A pass scans every partition this node leads (counting items and summing their
DynamoDB sizes), publishes the figures that changed to the control store, and the next
pass starts after `interval` seconds or after `COST_RATIO` times the last pass's
duration, whichever is longer: counting never takes more than 1/(COST_RATIO+1) of the
node's time however large its partitions grow. The scan yields to the event loop every
`CHUNK` items so requests are served in between.

The same scan finds where the partition would split for size (the autoadmin splits a
partition past `--split-size-bytes`): items come in hash order, so the size-weighted
median of their key hashes is the first hash at which half the bytes lie before it.
`SplitPoint` keeps it in bounded memory, within about 1/128 of the bytes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import NamedTuple

import orjson

from partita.api.values import item_size
from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import PartitionStats
from partita.control.store import Statistics
from partita.storage.engine import Engine

log = logging.getLogger(__name__)

COST_RATIO = 19
CHUNK = 512


def leads(partition: Partition, node_id: str) -> bool:
    """Whether this node counts the partition: its leader (or first replica while it has
    no leader), so that replicas of one partition are counted once."""
    return (partition.leader or partition.replicas[0]) == node_id


class Figures(NamedTuple):
    """What one count of a partition found."""

    item_count: int
    size_bytes: int
    split_hash: int | None = None  # where halving its bytes would cut (see SplitPoint)
    single_key: bool = False  # every item has one key hash: no cut divides them
    # Its heat as of the count (storage/heat.py): split for consumption.
    hot_seconds: float = 0.0
    hot_split_hash: int | None = None
    hot_single_key: bool = False


class SplitPoint:
    """The size-weighted median of key hashes fed in ascending order, in bounded memory.

    Each mark is a hash where a cut could go, with the bytes that lie before it. Marks
    are kept at least `step` bytes apart; past `MAX_MARKS` every other one is dropped
    and the step doubles, so between MAX_MARKS/2 and MAX_MARKS marks span the bytes
    seen and the chosen cut is within about 2/MAX_MARKS of the true halfway point.
    The first hash is never a mark: a cut there would leave the lower half empty.
    """

    MAX_MARKS = 256

    def __init__(self) -> None:
        self.marks: list[tuple[int, int]] = []  # (hash, bytes of the items hashed below it)
        self.step = 1
        self.total = 0
        self.last_hash: int | None = None
        self._next_mark = 0

    def add(self, h: int, size: int) -> None:
        if h != self.last_hash:
            if self.last_hash is not None and self.total >= self._next_mark:
                self.marks.append((h, self.total))
                if len(self.marks) > self.MAX_MARKS:
                    self.marks = self.marks[1::2]
                    self.step *= 2
                self._next_mark = self.marks[-1][1] + self.step
            self.last_hash = h
        self.total += size

    def split_hash(self) -> int | None:
        """The mark that best halves the bytes; None if no cut divides the items."""
        if not self.marks:
            return None
        return min(self.marks, key=lambda mark: abs(2 * mark[1] - self.total))[0]


async def measure_partition(engine: Engine, table_id: int, partition: Partition) -> Figures:
    """Item count, summed DynamoDB item size and split point of a partition's committed
    items."""
    lo, hi = keys.hash_range_bounds(table_id, partition.start, partition.end)
    count = size = 0
    split = SplitPoint()
    for key, value in engine.scan(lo, hi):
        if not keys.is_item_key(key):
            continue  # a transaction's lock, not an item
        count += 1
        item_bytes = item_size(orjson.loads(value))
        size += item_bytes
        split.add(keys.parse_item_key(key)[1], item_bytes)
        if count % CHUNK == 0:
            await asyncio.sleep(0)
    split_hash = split.split_hash()
    return Figures(count, size, split_hash, count > 0 and split_hash is None)


class StatsPublisher:
    """Remembers what was last published, so an unchanged figure costs no write."""

    def __init__(self, store: Statistics) -> None:
        self.store = store
        self.published: dict[tuple[int, str], Figures] = {}

    async def publish(self, table_id: int, partition_id: str, figures: Figures) -> None:
        if self.published.get((table_id, partition_id)) == figures:
            return
        await self.store.put_partition_stats(
            table_id,
            partition_id,
            PartitionStats(
                figures.item_count,
                figures.size_bytes,
                time.time(),
                figures.split_hash,
                figures.single_key,
                hot_seconds=figures.hot_seconds,
                hot_split_hash=figures.hot_split_hash,
                hot_single_key=figures.hot_single_key,
            ),
        )
        self.published[(table_id, partition_id)] = figures

    def forget(self, table_id: int) -> None:
        self.published = {k: v for k, v in self.published.items() if k[0] != table_id}


def next_pass_delay(interval: float, pass_seconds: float) -> float:
    return max(interval, COST_RATIO * pass_seconds)
