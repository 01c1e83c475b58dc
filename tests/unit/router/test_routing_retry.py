"""RouterContext.send: floor lookup to the owning node, refresh and retry on stale routes."""

from __future__ import annotations

import pytest

from partita._proto import storage_pb2 as pb
from partita.common.errors import DynamoError
from partita.common.partition_map import Partition
from partita.control.model import NodeRecord, TableRecord
from partita.control.store import MemoryControlStore
from partita.router import context as context_module
from partita.router.context import RouterContext, RouterSettings
from partita.router.table_cache import TableCache
from tests.unit.records import put_record, table_record

HALF = 2**63


class ScriptedChannel:
    """Answers each call with the next scripted status; records what it was sent."""

    def __init__(self, node: str, script: list[int], log: list[tuple[str, str, int]]) -> None:
        self.node, self.script, self.log = node, script, log

    async def call(self, request: pb.Request) -> pb.Response:
        self.log.append((self.node, request.partition_id, request.key_hash))
        status = self.script.pop(0) if self.script else pb.OK
        return pb.Response(id=request.id, status=status, value=b'{"v":{"S":"x"}}' if status == pb.OK else b"")


class ScriptedStorage:
    def __init__(self, scripts: dict[str, list[int]]) -> None:
        self.log: list[tuple[str, str, int]] = []
        self.channels = {f"{n}:data": ScriptedChannel(n, s, self.log) for n, s in scripts.items()}

    def channel(self, address: str) -> ScriptedChannel:
        return self.channels[address]


def _record(partitions: tuple[Partition, ...]) -> TableRecord:
    return table_record(*partitions, table_id=11)


async def _context(store: MemoryControlStore, storage: ScriptedStorage) -> RouterContext:
    for node in ("a", "b"):
        await store.register_node(NodeRecord(node, node, f"{node}:grpc", f"{node}:data"), ttl=10)
    tables = TableCache(store)
    await tables.refresh()
    return RouterContext(tables, store, storage, RouterSettings())


async def test_send_goes_to_the_partition_whose_range_holds_the_hash() -> None:
    store = MemoryControlStore()
    await put_record(
        store, _record((Partition("p0", 0, HALF, ("a",), "a"), Partition("p1", HALF, 2**64, ("b",), "b")))
    )
    storage = ScriptedStorage({"a": [], "b": []})
    ctx = await _context(store, storage)
    table = ctx.tables.require_active("t")
    await ctx.send(table, pb.Request(op=pb.GET, key_hash=5))
    await ctx.send(table, pb.Request(op=pb.GET, key_hash=HALF))
    await ctx.send(table, pb.Request(op=pb.GET, key_hash=HALF - 1))
    assert storage.log == [("a", "p0", 5), ("b", "p1", HALF), ("a", "p0", HALF - 1)]


async def test_wrong_partition_refreshes_routes_and_retries_on_the_new_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context_module, "RETRY_PAUSE_SECONDS", 0)
    store = MemoryControlStore()
    await put_record(store, _record((Partition("p0", 0, 2**64, ("a",), "a"),)))
    storage = ScriptedStorage({"a": [pb.WRONG_PARTITION], "b": []})
    ctx = await _context(store, storage)
    stale = ctx.tables.require_active("t")
    # The partition moved to node b after the router cached its route.
    await put_record(store, _record((Partition("p0", 0, 2**64, ("b",), "b"),)))
    response = await ctx.send(stale, pb.Request(op=pb.GET, key_hash=42))
    assert response.status == pb.OK
    assert storage.log == [("a", "p0", 42), ("b", "p0", 42)]


async def test_unavailable_node_is_retried_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context_module, "RETRY_PAUSE_SECONDS", 0)
    store = MemoryControlStore()
    await put_record(store, _record((Partition("p0", 0, 2**64, ("a",), "a"),)))
    storage = ScriptedStorage({"a": [pb.UNAVAILABLE, pb.UNAVAILABLE], "b": []})
    ctx = await _context(store, storage)
    response = await ctx.send(ctx.tables.require_active("t"), pb.Request(op=pb.GET, key_hash=1))
    assert response.status == pb.OK
    assert [entry[0] for entry in storage.log] == ["a", "a", "a"]


async def test_a_node_that_never_answers_gives_a_retriable_500_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context_module, "RETRY_PAUSE_SECONDS", 0)
    store = MemoryControlStore()
    await put_record(store, _record((Partition("p0", 0, 2**64, ("a",), "a"),)))
    storage = ScriptedStorage({"a": [pb.UNAVAILABLE] * 100, "b": []})
    ctx = await _context(store, storage)
    with pytest.raises(DynamoError) as err:
        await ctx.send(ctx.tables.require_active("t"), pb.Request(op=pb.GET, key_hash=1))
    assert err.value.status == 500 and err.value.retriable
    assert len(storage.log) == context_module.SEND_ATTEMPTS


async def test_storage_errors_keep_their_dynamodb_namespace() -> None:
    store = MemoryControlStore()
    await put_record(store, _record((Partition("p0", 0, 2**64, ("a",), "a"),)))

    class Failing(ScriptedChannel):
        async def call(self, request: pb.Request) -> pb.Response:
            return pb.Response(
                id=request.id,
                status=pb.ERROR,
                error_code="ValidationException",
                error_message="bad",
            )

    storage = ScriptedStorage({"a": [], "b": []})
    storage.channels["a:data"] = Failing("a", [], storage.log)
    ctx = await _context(store, storage)
    with pytest.raises(DynamoError) as err:
        await ctx.send(ctx.tables.require_active("t"), pb.Request(op=pb.GET, key_hash=1))
    assert err.value.type_name == "com.amazon.coral.validate#ValidationException"
    assert err.value.status == 400 and not err.value.retriable


class CountingStore(MemoryControlStore):
    """Counts the route reads (a route refresh is one; TableCache is compiled in native
    builds, so the count is taken here)."""

    reads = 0

    async def list_tables(self) -> list[TableRecord]:
        self.reads += 1
        return await super().list_tables()


async def _replicated_context(storage: ScriptedStorage) -> tuple[RouterContext, CountingStore]:
    store = CountingStore()
    await put_record(store, _record((Partition("p0", 0, 2**64, ("a", "b"), "a"),)))
    ctx = await _context(store, storage)
    store.reads = 0
    return ctx, store


async def test_a_replicated_partitions_next_replica_is_asked_at_once_without_rereading_the_routes() -> None:
    # The recorded leader's node is down (a failover): the routes are right, the leader
    # is elsewhere; asking the next replica finds it, with no pause and no refresh.
    storage = ScriptedStorage({"a": [pb.UNAVAILABLE], "b": []})
    ctx, store = await _replicated_context(storage)
    response = await ctx.send(ctx.tables.require_active("t"), pb.Request(op=pb.PUT, key_hash=1))
    assert response.status == pb.OK
    assert [entry[0] for entry in storage.log] == ["a", "b"]
    assert store.reads == 0


async def test_when_every_replica_refuses_each_round_of_them_ends_with_a_refresh_and_the_attempts_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context_module, "RETRY_PAUSE_SECONDS", 0)
    storage = ScriptedStorage({"a": [pb.NOT_LEADER] * 100, "b": [pb.NOT_LEADER] * 100})
    ctx, store = await _replicated_context(storage)
    with pytest.raises(DynamoError) as err:
        await ctx.send(ctx.tables.require_active("t"), pb.Request(op=pb.PUT, key_hash=1))
    assert err.value.status == 500 and err.value.retriable
    assert [entry[0] for entry in storage.log] == ["a", "b"] * context_module.SEND_ATTEMPTS
    assert store.reads == context_module.SEND_ATTEMPTS
