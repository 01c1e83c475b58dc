"""MemoryControlStore: the in-process store must keep etcd's CAS semantics."""

from __future__ import annotations

import pytest

from partita.common.partition_map import Partition
from partita.control.model import KeyElement, NodeRecord, TableRecord
from partita.control.store import MemoryControlStore


def table(name: str = "Orders", table_id: int = 11) -> TableRecord:
    return TableRecord(
        name=name,
        table_id=table_id,
        status="CREATING",
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=1.0,
        partitions=(Partition("p0", 0, 2**64, ("n1",), "n1"),),
    )


@pytest.fixture
def store() -> MemoryControlStore:
    return MemoryControlStore()


async def test_create_table_stores_the_record_with_a_revision(store: MemoryControlStore) -> None:
    assert await store.create_table(table()) is True
    stored = await store.get_table("Orders")
    assert stored == table()
    assert stored is not None and stored.revision > 0
    assert await store.list_tables() == [table()]


async def test_create_table_refuses_a_taken_name(store: MemoryControlStore) -> None:
    assert await store.create_table(table(table_id=11))
    assert await store.create_table(table(table_id=13)) is False
    stored = await store.get_table("Orders")
    assert stored is not None and stored.table_id == 11


async def test_get_table_of_an_unknown_name_is_none(store: MemoryControlStore) -> None:
    assert await store.get_table("Nope") is None


async def test_replace_table_succeeds_on_the_current_revision_and_bumps_it(store: MemoryControlStore) -> None:
    await store.create_table(table())
    current = await store.get_table("Orders")
    assert current is not None
    assert await store.replace_table(current.with_status("ACTIVE")) is True
    after = await store.get_table("Orders")
    assert after is not None and after.status == "ACTIVE"
    assert after.revision > current.revision


async def test_replace_table_with_a_stale_revision_fails_and_changes_nothing(
    store: MemoryControlStore,
) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    assert await store.replace_table(first.with_status("ACTIVE"))
    assert await store.replace_table(first.with_status("DELETING")) is False
    after = await store.get_table("Orders")
    assert after is not None and after.status == "ACTIVE"


async def test_replace_table_of_a_missing_table_fails(store: MemoryControlStore) -> None:
    assert await store.replace_table(table()) is False
    assert await store.get_table("Orders") is None


async def test_remove_table_needs_the_current_revision(store: MemoryControlStore) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    await store.replace_table(first.with_status("DELETING"))
    assert await store.remove_table(first) is False
    current = await store.get_table("Orders")
    assert current is not None
    assert await store.remove_table(current) is True
    assert await store.get_table("Orders") is None
    assert await store.remove_table(current) is False


async def test_remove_table_removes_its_ready_markers_only(store: MemoryControlStore) -> None:
    await store.create_table(table("A", 1))
    await store.create_table(table("B", 13))
    for table_id in (1, 13):
        await store.mark_ready(table_id, "p0", "n1")
        await store.mark_ready(table_id, "p0", "n2")
    a = await store.get_table("A")
    assert a is not None
    assert await store.remove_table(a)
    assert await store.list_ready(1) == set()
    assert await store.list_ready(13) == {("p0", "n1"), ("p0", "n2")}


async def test_ready_markers_are_set_listed_and_cleared_per_table(store: MemoryControlStore) -> None:
    await store.mark_ready(5, "p0", "n1")
    await store.mark_ready(5, "p1", "n2")
    await store.mark_ready(5, "p1", "n2")  # idempotent
    await store.mark_ready(7, "p0", "n1")
    assert await store.list_ready(5) == {("p0", "n1"), ("p1", "n2")}
    await store.clear_ready(5, "p0", "n1")
    await store.clear_ready(5, "p9", "n9")  # clearing what is not there is fine
    assert await store.list_ready(5) == {("p1", "n2")}
    assert await store.list_ready(7) == {("p0", "n1")}


async def test_registered_nodes_are_listed_by_id_and_reregistration_replaces(
    store: MemoryControlStore,
) -> None:
    await store.register_node(NodeRecord("n2", "b", "h:2"), ttl=10)
    await store.register_node(NodeRecord("n1", "a", "h:1"), ttl=10)
    await store.register_node(NodeRecord("n2", "b", "h:22"), ttl=10)
    assert await store.list_nodes() == [NodeRecord("n1", "a", "h:1"), NodeRecord("n2", "b", "h:22")]


async def test_wait_for_change_returns_promptly_with_true(store: MemoryControlStore) -> None:
    assert await store.wait_for_change(30) is True
