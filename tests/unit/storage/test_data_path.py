"""The data path end to end: router's NodeChannel -> framed TCP -> DataProtocol -> Engine.

A real server on 127.0.0.1 (ephemeral port), a real engine in tmp_path. Requests are
counted per frame by wrapping the server's frame decoder, never by timing.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from google.protobuf.message import DecodeError

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.framing import FrameDecoder
from partita.common.partition_map import Partition, split_evenly
from partita.control.model import TableRecord
from partita.router.storage_client import NodeChannel
from partita.storage.data_server import DataPlane, DataProtocol, start_data_server
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from tests.unit import records

TABLE_ID = 0x1234_5679
OTHER_TABLE_ID = 0x7777_7771
NODE = "n1"
HALF = 2**63  # partition p0 = [0, 2**63) lives here, p1 = [2**63, 2**64) elsewhere


def table_record() -> TableRecord:
    (r0, r1) = split_evenly(2)
    return records.table_record(
        Partition("p0", *r0, (NODE,), NODE),
        Partition("p1", *r1, ("n2",), "n2"),
        name="orders",
        table_id=TABLE_ID,
    )


def key_for(n: int, hosted: bool = True) -> tuple[int, bytes]:
    """(hash, storage key) of the n-th test key, in the hosted half of the space or not."""
    h = (n * 7919) % HALF + (0 if hosted else HALF)
    return h, keys.item_key(TABLE_ID, h, b"key-%d" % n, None)


def get(n: int) -> pb.Request:
    h, k = key_for(n)
    return pb.Request(op=pb.GET, table_id=TABLE_ID, partition_id="p0", key_hash=h, key=k)


def put(n: int, value: bytes, return_old: bool = False) -> pb.Request:
    h, k = key_for(n)
    body = orjson.dumps({"return_old": True}) if return_old else b""
    return pb.Request(
        op=pb.PUT, table_id=TABLE_ID, partition_id="p0", key_hash=h, key=k, value=value, body=body
    )


def put_if_absent(n: int, value: bytes) -> pb.Request:
    request = put(n, value)
    request.body = orjson.dumps({"condition": "attribute_not_exists(pk)"})
    return request


def delete(n: int) -> pb.Request:
    h, k = key_for(n)
    return pb.Request(op=pb.DELETE, table_id=TABLE_ID, partition_id="p0", key_hash=h, key=k)


@dataclass
class Node:
    engine: Engine
    server: asyncio.Server
    address: str
    protocols: list[DataProtocol] = field(default_factory=list)
    frames: list[int] = field(default_factory=list)  # requests per frame received
    sent: list[pb.Response] = field(default_factory=list)  # answers, as the server sends them
    commit_groups: list[int] = field(default_factory=list)  # writes per commit_staged


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    engine = Engine.open(tmp_path / "node", sync=False)
    state = NodeState(NODE, "a", engine, hosted=desired_hosting([table_record()], NODE))
    protocols: list[DataProtocol] = []
    frames: list[int] = []
    sent: list[pb.Response] = []

    class Recording(DataProtocol):
        def __init__(self, plane: DataPlane) -> None:
            super().__init__(plane)
            protocols.append(self)
            decoder = self._decoder

            class Counting(FrameDecoder):
                def feed(self, data: bytes) -> list[bytes]:
                    out = decoder.feed(data)
                    for f in out:
                        try:
                            frames.append(len(pb.RequestBatch.FromString(f).requests))
                        except DecodeError:
                            frames.append(-1)
                    return out

            self._decoder = Counting()

        def _send(self, responses: list[pb.Response]) -> None:
            sent.extend(responses)
            super()._send(responses)

    server = await start_data_server(DataPlane(state), "127.0.0.1", 0, protocol=Recording)
    port = server.sockets[0].getsockname()[1]
    n = Node(engine, server, f"127.0.0.1:{port}", protocols, frames, sent)
    real_commit_staged = engine.commit_staged

    async def counting_commit_staged(
        writes: list[list[object]], groups: list[str] | None = None
    ) -> list[int]:
        n.commit_groups.append(len(writes))
        return await real_commit_staged(writes, groups)  # type: ignore[arg-type]

    engine.commit_staged = counting_commit_staged  # type: ignore[method-assign]
    yield n
    server.close()
    for p in protocols:
        if p._transport is not None:
            p._transport.abort()
    await server.wait_closed()
    engine.commit_staged = real_commit_staged  # type: ignore[method-assign]
    await engine.close()


@pytest.fixture
async def channel(node: Node) -> AsyncIterator[NodeChannel]:
    ch = NodeChannel(node.address)
    yield ch
    await ch.close()


async def test_put_then_get_round_trips_the_value(node: Node, channel: NodeChannel) -> None:
    response = await channel.call(put(1, b'{"pk":{"S":"key-1"}}'))
    assert response.status == pb.OK
    response = await channel.call(get(1))
    assert response.status == pb.OK
    assert response.value == b'{"pk":{"S":"key-1"}}'
    assert node.engine.get(key_for(1)[1]) == b'{"pk":{"S":"key-1"}}'


async def test_get_of_a_missing_key_is_not_found(channel: NodeChannel) -> None:
    assert (await channel.call(get(2))).status == pb.NOT_FOUND


async def test_put_with_return_old_answers_the_replaced_value(channel: NodeChannel) -> None:
    await channel.call(put(3, b"first"))
    response = await channel.call(put(3, b"second", return_old=True))
    assert response.status == pb.OK
    assert response.value == b"first"


async def test_delete_removes_the_item(channel: NodeChannel) -> None:
    await channel.call(put(4, b"v"))
    assert (await channel.call(delete(4))).status == pb.OK
    assert (await channel.call(get(4))).status == pb.NOT_FOUND
    # Deleting what is not there is still OK.
    assert (await channel.call(delete(4))).status == pb.OK


async def test_a_hash_outside_the_hosted_partitions_is_wrong_partition(
    node: Node, channel: NodeChannel
) -> None:
    h, k = key_for(5, hosted=False)
    request = pb.Request(op=pb.PUT, table_id=TABLE_ID, partition_id="p1", key_hash=h, key=k, value=b"v")
    assert (await channel.call(request)).status == pb.WRONG_PARTITION
    assert node.engine.get(k) is None


async def test_an_unknown_table_is_wrong_partition(channel: NodeChannel) -> None:
    request = pb.Request(op=pb.GET, table_id=OTHER_TABLE_ID, key_hash=1, key=b"x")
    assert (await channel.call(request)).status == pb.WRONG_PARTITION


async def test_an_unsupported_operation_answers_a_validation_error(channel: NodeChannel) -> None:
    h, k = key_for(6)
    response = await channel.call(pb.Request(op=pb.OP_UNSPECIFIED, table_id=TABLE_ID, key_hash=h, key=k))
    assert response.status == pb.ERROR
    assert response.error_code == "ValidationException"


async def test_concurrent_requests_travel_in_batches_and_each_gets_its_own_answer(
    node: Node, channel: NodeChannel
) -> None:
    count = 200
    # Calls started together, before the connection exists, leave in one frame.
    writes = await asyncio.gather(*(channel.call(put(n, b"value-%d" % n)) for n in range(count)))
    assert [r.status for r in writes] == [pb.OK] * count
    assert node.frames == [count]
    assert node.commit_groups == [count]  # one WAL append_many for the whole frame
    # On an open connection, calls made in one event-loop turn share a frame too.
    reads = await asyncio.gather(*(channel.call(get(n)) for n in range(count)))
    assert [r.value for r in reads] == [b"value-%d" % n for n in range(count)]
    assert node.frames == [count, count]


async def test_a_failed_commit_answers_every_write_of_the_batch_with_an_error(
    node: Node, channel: NodeChannel
) -> None:
    async def failing(writes: list[object], groups: object = None) -> list[int]:
        raise OSError(5, "disk on fire")

    node.engine.commit_staged = failing  # type: ignore[method-assign,assignment]
    responses = await asyncio.gather(
        channel.call(put(7, b"a")), channel.call(put(8, b"b")), channel.call(get(9))
    )
    assert [r.status for r in responses] == [pb.ERROR, pb.ERROR, pb.NOT_FOUND]
    assert {r.error_code for r in responses[:2]} == {"InternalServerError"}


async def test_connection_loss_fails_in_flight_calls_and_the_next_call_reconnects(
    node: Node, channel: NodeChannel
) -> None:
    await channel.call(put(10, b"before"))
    stalled = asyncio.Event()
    release = asyncio.Event()
    real = node.engine.commit_staged

    async def stall(writes: list[list[object]], groups: list[str] | None = None) -> list[int]:
        stalled.set()
        await release.wait()
        return await real(writes, groups)  # type: ignore[arg-type]

    node.engine.commit_staged = stall  # type: ignore[method-assign]
    in_flight = asyncio.create_task(channel.call(put(11, b"lost?")))
    await asyncio.wait_for(stalled.wait(), 10)
    for p in node.protocols:
        assert p._transport is not None
        p._transport.abort()
    response = await asyncio.wait_for(in_flight, 10)
    # The node had the write: it may yet commit, so the router must not send it again.
    assert response.status == pb.ERROR and response.error_code == "InternalServerError"
    release.set()
    node.engine.commit_staged = real  # type: ignore[method-assign]
    response = await asyncio.wait_for(channel.call(get(10)), 10)
    assert response.status == pb.OK and response.value == b"before"
    assert len(node.protocols) == 2  # a second connection was made


async def test_a_node_lost_with_requests_in_flight_retries_reads_but_not_writes() -> None:
    """A read the node never answered is safe to send elsewhere (UNAVAILABLE, which the
    router retries); a write it received has an unknown outcome (InternalServerError)."""
    received = asyncio.Event()

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        received.set()
        await asyncio.sleep(0.2)  # both requests arrive, then the node dies unanswering
        writer.transport.abort()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    channel = NodeChannel(f"127.0.0.1:{port}")
    try:
        read, write = await asyncio.wait_for(
            asyncio.gather(channel.call(get(1)), channel.call(put(2, b"v"))), 10
        )
    finally:
        await channel.close()
        server.close()
        await server.wait_closed()
    assert received.is_set()
    assert read.status == pb.UNAVAILABLE
    assert write.status == pb.ERROR and write.error_code == "InternalServerError"


async def test_a_node_that_cannot_be_reached_answers_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        channel = NodeChannel(f"127.0.0.1:{port}")
        try:
            responses = await asyncio.gather(channel.call(get(1)), channel.call(get(2)))
        finally:
            await channel.close()
    assert [r.status for r in responses] == [pb.UNAVAILABLE, pb.UNAVAILABLE]


async def test_an_oversize_frame_closes_the_connection_and_the_server_keeps_serving(
    node: Node, channel: NodeChannel
) -> None:
    host, port = node.address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(struct.pack(">I", 2**32 - 1))
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    assert (await channel.call(get(12))).status == pb.NOT_FOUND


async def test_a_frame_that_is_not_a_request_batch_closes_only_that_connection(
    node: Node, channel: NodeChannel, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = node.address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    junk = b"\xff\xff\xff\xff\xff"
    writer.write(struct.pack(">I", len(junk)) + junk)
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    assert (await channel.call(get(13))).status == pb.NOT_FOUND
    # A bad client is not a server fault: no error (with a traceback) in the log.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


class HeldWal:
    """The engine's WAL appends wait for `release`; the first then fails if told to."""

    def __init__(self, engine: Engine, fail_first: bool) -> None:
        self.release = asyncio.Event()
        self.fail_first = fail_first
        self._append = engine._wal.append_many
        engine._wal.append_many = self.append_many  # type: ignore[method-assign]

    async def append_many(self, payloads: list[bytes]) -> list[int]:
        await self.release.wait()
        if self.fail_first:
            self.fail_first = False
            raise OSError(5, "disk on fire")
        return await self._append(payloads)


async def _two_racing_puts(node: Node, channel: NodeChannel) -> tuple[asyncio.Task[pb.Response], ...]:
    """Two puts-if-absent of one key, the second planned while the first is not durable."""
    first = asyncio.create_task(channel.call(put_if_absent(10, b'{"pk":{"S":"first"}}')))
    for _ in range(200):
        if node.engine.pending(key_for(10)[1]):
            break
        await asyncio.sleep(0.005)
    second = asyncio.create_task(channel.call(put_if_absent(10, b'{"pk":{"S":"second"}}')))
    for _ in range(200):
        if sum(node.frames) == 2:  # planned: in the same step as the frame was read
            break
        await asyncio.sleep(0.005)
    assert sum(node.frames) == 2
    return first, second


async def test_a_condition_failed_on_a_write_not_yet_durable_is_answered_after_that_write(
    node: Node, channel: NodeChannel
) -> None:
    """Answered at once, the failure would tell a client of an item a strongly
    consistent read cannot find yet (and never would, had the write failed)."""
    wal = HeldWal(node.engine, fail_first=False)
    first, second = await _two_racing_puts(node, channel)
    assert node.sent == []  # the failure read the first put's item: it waits for it
    wal.release.set()
    answers = [await first, await second]
    assert [(r.status, r.error_code) for r in answers] == [
        (pb.OK, ""),
        (pb.ERROR, "ConditionalCheckFailedException"),
    ]
    assert [r.id for r in node.sent] == [r.id for r in answers]  # in that order
    assert (await channel.call(get(10))).value == b'{"pk":{"S":"first"}}'


async def test_a_condition_failed_on_a_write_that_then_fails_is_planned_again(
    node: Node, channel: NodeChannel
) -> None:
    wal = HeldWal(node.engine, fail_first=True)
    first, second = await _two_racing_puts(node, channel)
    wal.release.set()
    assert (await first).error_code == "InternalServerError"
    assert (await second).status == pb.OK  # no item after all: its condition holds
    assert (await channel.call(get(10))).value == b'{"pk":{"S":"second"}}'
