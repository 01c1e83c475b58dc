"""DynamoDB Streams' 24 hours, and point-in-time recovery's period: each partition's
leader drops its older stream and history records.

Every `interval` seconds a pass sends each partition this node leads a STREAM_TRIM through the node's own write path (a plane without
buckets, as the TTL sweeper's): the records go by a range delete in the partition's
log, so every replica drops the same ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson

from partita._proto import storage_pb2 as pb
from partita.control.model import STREAM_RETENTION_SECONDS
from partita.storage.data_server import DataPlane

if TYPE_CHECKING:
    from partita.storage.node import NodeState

log = logging.getLogger(__name__)

TRIM_INTERVAL_SECONDS = 60.0
# Partitions planned between two turns of the event loop.
YIELD_EVERY = 64


class StreamTrimmer:
    def __init__(
        self,
        state: NodeState,
        plane: DataPlane,
        *,
        interval: float = TRIM_INTERVAL_SECONDS,
        retention: float = STREAM_RETENTION_SECONDS,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.state = state
        self.plane = plane
        self.interval = interval
        self.retention = retention
        self.clock = clock
        self.sleep = sleep
        self.trims = 0  # partitions whose records were trimmed, over the node's life

    async def run(self) -> None:
        while True:
            await self.sleep(self.interval)
            try:
                await self.trim_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # the next pass tries again
                log.exception("stream trim failed")

    async def trim_once(self) -> None:
        now = self.clock()
        body = orjson.dumps({"cutoff": now - self.retention, "now": now})
        # Every table: a point-in-time recovery history may be kept where the node was
        # not told of it (a Kubernetes storage pod knows a table's stream, not its
        # recovery), and a pass over a partition without records is one empty seek.
        planned = 0
        for table_id, hosted in list(self.state.hosted.items()):
            for partition in hosted.partitions:
                if not self.state.leads(table_id, partition):
                    continue
                planned += 1
                if planned % YIELD_EVERY == 0:  # thousands of partitions: let requests in between
                    await asyncio.sleep(0)
                request = pb.Request(
                    op=pb.STREAM_TRIM, table_id=table_id, key_hash=partition.start, body=body
                )
                plan = self.plane.plan(request)
                if plan.effects:
                    responses = await self.plane.commit([plan])
                    self.trims += sum(1 for r in responses if r.status == pb.OK)
