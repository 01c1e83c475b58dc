"""Time to Live, the I/O part: each partition's leader deletes its expired items.

A pass walks the partitions this node leads in tables with TTL on, a chunk of items at
a time (storage/ttl_sweep.py decides which are expired and how long to rest between
chunks). An expired item is deleted by a conditional delete planned and committed
through the node's normal write path (the same `DataPlane` as client requests): the
condition "still expired" is checked against the newest state, including writes not yet
durable, in the same synchronous step that stages the delete, so a concurrent write
that extends the item's TTL wins. Once partitions are replicated the same plan becomes
a log entry, unchanged. The delete is logged as a SERVICE_DELETE for Streams.

Reads return an expired item until the sweeper has deleted it, as on DynamoDB.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import streams
from partita.common import keys
from partita.common.partition_map import Partition
from partita.storage.data_server import DataPlane
from partita.storage.ttl_sweep import CHUNK_ITEMS, SweepPacer, is_expired, still_expired_condition

if TYPE_CHECKING:
    from partita.storage.node import NodeState

log = logging.getLogger(__name__)


class TtlSweeper:
    """Deletes the expired items of the partitions this node leads, within its pacer's
    share of the node's time. `clock` is wall time (epoch seconds: expiry is compared
    with it), `monotonic` measures work, `sleep` rests; tests inject all three."""

    def __init__(
        self,
        state: NodeState,
        plane: DataPlane,
        pacer: SweepPacer,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.state = state
        self.plane = plane
        self.pacer = pacer
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        # Counters (the metrics endpoint exports them): items deleted as expired, and
        # candidates that were no longer expired (or gone) at the moment of deletion.
        self.deleted = 0
        self.skipped = 0
        self.passes = 0

    async def run(self) -> None:
        while True:
            self.pacer.pass_started(self.monotonic())
            try:
                await self.sweep_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # a failed pass is retried by the next one
                log.exception("TTL sweep failed")
            await self.sleep(self.pacer.until_next_pass(self.monotonic()))

    async def sweep_once(self) -> None:
        """One pass over every partition this node leads in a table with TTL on."""
        deleted_before = self.deleted
        for table_id, hosted in list(self.state.hosted.items()):
            if not hosted.record.time_to_live.active:
                continue
            for partition in hosted.partitions:
                if self.state.leads(table_id, partition):
                    await self._sweep_partition(table_id, partition)
        self.passes += 1
        if self.deleted > deleted_before:
            log.info("TTL sweep deleted %d expired items", self.deleted - deleted_before)

    async def _sweep_partition(self, table_id: int, partition: Partition) -> None:
        lo, hi = keys.hash_range_bounds(table_id, partition.start, partition.end)
        cursor: bytes | None = lo
        while cursor is not None:
            # Re-read between chunks: the table may have been dropped or TTL turned off.
            hosted = self.state.hosted.get(table_id)
            ttl = hosted.record.time_to_live if hosted is not None else None
            if ttl is None or not ttl.active or ttl.attribute_name is None:
                return
            self.pacer.chunk_started(self.monotonic())
            cursor = await self._sweep_chunk(table_id, ttl.attribute_name, cursor, hi)
            await self.sleep(self.pacer.chunk_finished(self.monotonic()))

    async def _sweep_chunk(self, table_id: int, attribute: str, lo: bytes, hi: bytes) -> bytes | None:
        """Delete the expired items among the next CHUNK_ITEMS from `lo`; the key to
        continue from, or None at the end of the range."""
        now = self.clock()
        expired: list[bytes] = []
        read = 0
        last = lo
        for key, value in self.state.engine.scan(lo, hi):
            if not keys.is_item_key(key):
                continue  # a transaction's lock, not an item
            read += 1
            last = key
            if is_expired(orjson.loads(value), attribute, now):
                expired.append(key)
            if read >= CHUNK_ITEMS:
                break
        if expired:
            await self._delete(table_id, attribute, expired)
        return last + b"\x00" if read >= CHUNK_ITEMS else None

    async def _delete(self, table_id: int, attribute: str, candidates: list[bytes]) -> None:
        options = {**still_expired_condition(attribute, self.clock()), "service": True}
        hosted = self.state.hosted.get(table_id)
        if hosted is not None:  # DynamoDB streams TTL deletes, as the service's REMOVE records
            options.update(streams.record_options(hosted.record, self.clock()))
        body = orjson.dumps(options)
        plans = []
        for key in candidates:
            _, key_hash, _, _ = keys.parse_item_key(key)
            request = pb.Request(op=pb.DELETE, table_id=table_id, key_hash=key_hash, key=key, body=body)
            plans.append(self.plane.plan(request))
        writes = [p for p in plans if p.effects]
        self.skipped += len(plans) - len(writes)
        if writes:
            responses = await self.plane.commit(writes)
            self.deleted += sum(1 for r in responses if r.status == pb.OK)
