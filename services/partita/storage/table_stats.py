"""ItemCount and TableSizeBytes: each partition's leader counts its items now and then.

DynamoDB refreshes these figures about every six hours and says recent changes may be
missing; Partita follows the same contract, measuring more often but with a bounded
cost. A pass scans every partition this node leads (counting items and summing their
DynamoDB sizes), publishes the figures that changed to the control store, and the next
pass starts after `interval` seconds or after `COST_RATIO` times the last pass's
duration, whichever is longer: counting never takes more than 1/(COST_RATIO+1) of the
node's time however large its partitions grow. The scan yields to the event loop every
`CHUNK` items so requests are served in between.
"""

from __future__ import annotations

import asyncio
import logging
import time

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


async def measure_partition(engine: Engine, table_id: int, partition: Partition) -> tuple[int, int]:
    """(item count, summed DynamoDB item size) of a partition's committed items."""
    lo, hi = keys.hash_range_bounds(table_id, partition.start, partition.end)
    count = size = 0
    for _, value in engine.scan(lo, hi):
        count += 1
        size += item_size(orjson.loads(value))
        if count % CHUNK == 0:
            await asyncio.sleep(0)
    return count, size


class StatsPublisher:
    """Remembers what was last published, so an unchanged figure costs no write."""

    def __init__(self, store: Statistics) -> None:
        self.store = store
        self.published: dict[tuple[int, str], tuple[int, int]] = {}

    async def publish(self, table_id: int, partition_id: str, figures: tuple[int, int]) -> None:
        if self.published.get((table_id, partition_id)) == figures:
            return
        await self.store.put_partition_stats(
            table_id, partition_id, PartitionStats(figures[0], figures[1], time.time())
        )
        self.published[(table_id, partition_id)] = figures

    def forget(self, table_id: int) -> None:
        self.published = {k: v for k, v in self.published.items() if k[0] != table_id}


def next_pass_delay(interval: float, pass_seconds: float) -> float:
    return max(interval, COST_RATIO * pass_seconds)
