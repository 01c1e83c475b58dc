"""Which partitions a node serves, and which tables' data it must drop (pure)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.partition_map import Partition, split_evenly
from partita.control.model import TableRecord, TableStatus
from partita.control.store import MemoryControlStore
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.hosting import HostedTable, desired_hosting, tables_to_drop
from partita.storage.node import NodeState, StorageService, reconcile_hosting, table_nodes
from tests.unit import records
from tests.unit.records import put_record

END = 2**64


def table_record(
    table_id: int,
    replicas: list[tuple[str, ...]],
    status: TableStatus = "ACTIVE",
    name: str | None = None,
) -> TableRecord:
    partitions = tuple(
        Partition(f"p{i}", start, end, reps, reps[0])
        for i, ((start, end), reps) in enumerate(zip(split_evenly(len(replicas)), replicas, strict=True))
    )
    return records.table_record(*partitions, name=name or f"t{table_id}", table_id=table_id, status=status)


def test_hosted_table_keeps_only_this_nodes_partitions_in_hash_order() -> None:
    r = table_record(1, [("a",), ("b",), ("a", "c"), ("b",)])
    hosted = HostedTable.of(r, "a")
    assert [p.partition_id for p in hosted.partitions] == ["p0", "p2"]
    assert hosted.starts == (0, END // 2)


def test_owner_of_finds_the_hosted_partition_at_both_edges_of_its_range() -> None:
    r = table_record(1, [("a",), ("b",), ("a",), ("b",)])
    hosted = HostedTable.of(r, "a")
    p0, p2 = r.partitions[0], r.partitions[2]
    assert hosted.owner_of(0) == p0
    assert hosted.owner_of(p0.end - 1) == p0
    assert hosted.owner_of(p2.start) == p2
    assert hosted.owner_of(p2.end - 1) == p2


def test_owner_of_is_none_for_hashes_in_partitions_hosted_elsewhere() -> None:
    r = table_record(1, [("b",), ("a",), ("b",)])
    hosted = HostedTable.of(r, "a")
    p1 = r.partitions[1]
    assert hosted.owner_of(0) is None  # before the first hosted start
    assert hosted.owner_of(p1.start - 1) is None
    assert hosted.owner_of(p1.end) is None  # after the hosted range, same bisect slot
    assert hosted.owner_of(END - 1) is None


def test_owner_of_covers_the_top_of_the_hash_space() -> None:
    hosted = HostedTable.of(table_record(1, [("b",), ("a",)]), "a")
    assert hosted.owner_of(END - 1) is not None


def test_desired_hosting_includes_creating_and_active_tables_with_a_replica_here() -> None:
    tables = [
        table_record(1, [("a",), ("b",)], "ACTIVE"),
        table_record(3, [("a",)], "CREATING"),
        table_record(5, [("b",)], "ACTIVE"),
        table_record(7, [("a",)], "DELETING"),
    ]
    hosting = desired_hosting(tables, "a")
    assert set(hosting) == {1, 3}
    assert [p.partition_id for p in hosting[1].partitions] == ["p0"]
    assert hosting[3].record is tables[1]


def test_desired_hosting_of_a_node_without_replicas_is_empty() -> None:
    assert desired_hosting([table_record(1, [("b",)])], "a") == {}


def test_a_deleting_table_with_a_replica_here_is_dropped_even_without_known_data() -> None:
    tables = [table_record(7, [("a",)], "DELETING"), table_record(9, [("b",)], "DELETING")]
    assert tables_to_drop(tables, set(), "a") == [7]


def test_data_of_a_table_gone_from_the_store_is_dropped() -> None:
    tables = [table_record(1, [("a",)])]
    assert tables_to_drop(tables, {1, 11, 13}, "a") == [11, 13]


def test_live_tables_are_never_dropped_even_when_hosted_elsewhere() -> None:
    tables = [
        table_record(1, [("a",)]),
        table_record(3, [("b",)], "CREATING"),
        table_record(5, [("b",)], "UPDATING"),
    ]
    assert tables_to_drop(tables, {1, 3, 5}, "a") == []


def test_data_of_a_deleting_table_hosted_elsewhere_is_dropped_too() -> None:
    # Left behind by a move, say: the table is going away, so the data goes too.
    tables = [table_record(9, [("b",)], "DELETING")]
    assert tables_to_drop(tables, {9}, "a") == [9]


# --- the node acting on the difference (reconcile_hosting, Status) ----------------------


@pytest.fixture
async def node_state(tmp_path: Path) -> AsyncIterator[NodeState]:
    engine = Engine.open(tmp_path / "node", sync=False)
    yield NodeState("a", "zone-a", engine, ids_with_data=engine.table_ids())
    await engine.close()


async def put_rows(state: NodeState, table_id: int, count: int = 3) -> None:
    lo, _ = keys.table_bounds(table_id)
    await state.engine.commit([Effect(Kind.PUT, lo + b"row%d" % i, b"v") for i in range(count)])


def rows(state: NodeState, table_id: int) -> int:
    return sum(1 for _ in state.engine.scan(*keys.table_bounds(table_id)))


async def test_reconcile_serves_assigned_partitions_and_marks_each_ready(node_state: NodeState) -> None:
    store = MemoryControlStore()
    record = table_record(1, [("a",), ("b",), ("a",)], "CREATING")
    await put_record(store, record)
    await reconcile_hosting(node_state, store, await store.list_tables())
    assert set(node_state.hosted) == {1}
    assert await store.list_ready(1) == {("p0", "a"), ("p2", "a")}
    owner = node_state.owner(pb.Request(table_id=1, key_hash=0))
    assert owner is not None and owner.partition_id == "p0"
    assert node_state.owner(pb.Request(id=4, table_id=1, key_hash=END // 2)) is None


async def test_reconcile_drops_a_deleting_tables_data_and_ready_markers(node_state: NodeState) -> None:
    store = MemoryControlStore()
    await put_record(store, table_record(1, [("a",)]))
    await put_record(store, table_record(3, [("a",)]))
    await reconcile_hosting(node_state, store, await store.list_tables())
    await put_rows(node_state, 1)
    await put_rows(node_state, 3)
    await put_record(store, table_record(1, [("a",)], "DELETING"))
    await reconcile_hosting(node_state, store, await store.list_tables())
    assert rows(node_state, 1) == 0
    assert rows(node_state, 3) == 3
    assert await store.list_ready(1) == set()
    assert await store.list_ready(3) == {("p0", "a")}
    assert set(node_state.hosted) == {3}
    assert node_state.engine.table_ids() == {3}


async def test_reconcile_drops_data_of_a_table_the_store_no_longer_has(node_state: NodeState) -> None:
    await put_rows(node_state, 5)
    node_state.ids_with_data = node_state.engine.table_ids()
    await reconcile_hosting(node_state, MemoryControlStore(), [])
    assert rows(node_state, 5) == 0
    assert node_state.ids_with_data == set()


async def test_a_dropped_tables_partition_positions_stay_gone_after_a_restart(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "node", sync=False)
    lo, _ = keys.table_bounds(5)
    await engine.commit([Effect(Kind.PUT, lo + b"row", b"v")], group_of(5, "p0"))
    state = NodeState("a", "zone-a", engine, ids_with_data=engine.table_ids())
    await reconcile_hosting(state, MemoryControlStore(), [])
    assert group_of(5, "p0") not in engine.groups()
    await engine.close()
    engine = Engine.open(tmp_path / "node", sync=False)
    try:
        assert group_of(5, "p0") not in engine.groups() and engine.table_ids() == set()
    finally:
        await engine.close()


async def test_status_reports_every_hosted_partition(node_state: NodeState) -> None:
    store = MemoryControlStore()
    await put_record(store, table_record(1, [("b",), ("a",)]))
    await reconcile_hosting(node_state, store, await store.list_tables())
    status = await StorageService(node_state).Status(pb.StatusRequest(), None)  # type: ignore[arg-type]
    assert (status.node_id, status.zone) == ("a", "zone-a")
    [hosted] = status.partitions
    assert (hosted.table_id, hosted.partition_id, hosted.start) == (1, "p1", END // 2)
    assert hosted.end_exclusive_minus_one == END - 1


async def test_status_can_report_only_the_partitions_this_node_leads(node_state: NodeState) -> None:
    store = MemoryControlStore()
    await put_record(store, table_record(1, [("a",), ("b", "a")]))  # p1 is led by b
    await reconcile_hosting(node_state, store, await store.list_tables())
    service = StorageService(node_state)
    every = await service.Status(pb.StatusRequest(), None)  # type: ignore[arg-type]
    led = await service.Status(pb.StatusRequest(leaders_only=True), None)  # type: ignore[arg-type]
    assert [p.partition_id for p in every.partitions] == ["p0", "p1"]
    assert [(p.partition_id, p.role) for p in led.partitions] == [("p0", "leader")]


async def test_table_nodes_are_every_node_of_a_hosted_tables_partitions(node_state: NodeState) -> None:
    # What repair keeps a new member within (the table's shuffle shard), read from the
    # table record the node hosts from, its other partitions' nodes and the ones being
    # built included.
    record = table_record(1, [("a", "b", "c"), ("d", "e", "f")])
    building = dataclasses.replace(record.partitions[1], joining=("g",))
    record = dataclasses.replace(record, partitions=(record.partitions[0], building))
    node_state.hosted = desired_hosting([record], "a")
    assert table_nodes(node_state, 1) == frozenset("abcdefg")
    assert table_nodes(node_state, 2) == frozenset()  # a table not hosted here
