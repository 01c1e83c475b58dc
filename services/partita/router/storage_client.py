"""The router's side of the data path: one batched bidirectional stream per storage node.

Every request queued during one event-loop turn leaves in one RequestBatch; responses
come back batched and are matched by id. A broken stream fails every request in flight
with UNAVAILABLE (the caller retries with fresh routes) and the next call reconnects.
Deadlines are enforced by a once-a-second sweep, not a timer per request: a timer per
request would cost more CPU than the rest of the router's work on a read.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

import grpc

from partita._proto import storage_pb2 as pb
from partita._proto import storage_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

# A request without an answer after this long fails as UNAVAILABLE.
REQUEST_TIMEOUT_SECONDS = 10.0


def _unavailable(request_id: int) -> pb.Response:
    return pb.Response(id=request_id, status=pb.UNAVAILABLE)


class NodeChannel:
    def __init__(self, address: str) -> None:
        self.address = address
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[pb.Response], float]] = {}
        self._queue: list[pb.Request] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def call(self, request: pb.Request) -> pb.Response:
        request.id = next(self._ids)
        future: asyncio.Future[pb.Response] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = (future, time.monotonic() + REQUEST_TIMEOUT_SECONDS)
        self._queue.append(request)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        channel = grpc.aio.insecure_channel(
            self.address,
            options=[("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000)],
        )
        stream = pb_grpc.StorageStub(channel).Exchange()
        reader = asyncio.create_task(self._read(stream))
        sweeper = asyncio.create_task(self._sweep())
        try:
            while not reader.done():
                if not self._queue:
                    self._wake.clear()
                    waiter = asyncio.create_task(self._wake.wait())
                    await asyncio.wait({waiter, reader}, return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    continue
                batch = self._queue
                self._queue = []
                await stream.write(pb.RequestBatch(requests=batch))
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, ConnectionError) as exc:
            log.warning("stream to %s broke: %s", self.address, exc)
        finally:
            reader.cancel()
            sweeper.cancel()
            self._fail_all()
            await channel.close()

    async def _read(self, stream: grpc.aio.StreamStreamCall) -> None:
        try:
            while True:
                batch = await stream.read()
                if batch is grpc.aio.EOF:
                    return
                for response in batch.responses:
                    entry = self._pending.pop(response.id, None)
                    if entry is not None and not entry[0].done():
                        entry[0].set_result(response)
        except grpc.aio.AioRpcError as exc:
            log.warning("stream from %s broke: %s", self.address, exc.code())

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            expired = [rid for rid, (_, deadline) in self._pending.items() if deadline < now]
            for rid in expired:
                future, _ = self._pending.pop(rid)
                if not future.done():
                    future.set_result(_unavailable(rid))

    def _fail_all(self) -> None:
        pending, self._pending = self._pending, {}
        self._queue = []
        for rid, (future, _) in pending.items():
            if not future.done():
                future.set_result(_unavailable(rid))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


class StorageClient:
    """Channels to storage nodes by address, created on first use."""

    def __init__(self) -> None:
        self._channels: dict[str, NodeChannel] = {}

    def channel(self, address: str) -> NodeChannel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = NodeChannel(address)
        return ch

    async def close(self) -> None:
        for ch in self._channels.values():
            await ch.close()
