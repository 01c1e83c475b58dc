"""Table lifecycle: CREATING -> ACTIVE once every replica serves; DELETING -> gone."""

from __future__ import annotations

import logging

import pytest

from partita.autoadmin.lifecycle import drive_lifecycle, next_transition
from partita.common.partition_map import Partition
from partita.control.model import TableRecord, TableStatus
from partita.control.store import MemoryControlStore
from tests.unit.records import table_record

HALF = 2**63


def table(name: str = "Orders", table_id: int = 11, status: TableStatus = "CREATING") -> TableRecord:
    return table_record(
        Partition("p0", 0, HALF, ("n1", "n2"), "n1"),
        Partition("p1", HALF, 2**64, ("n3",), "n3"),
        name=name,
        table_id=table_id,
        status=status,
    )


ALL_READY = {("p0", "n1"), ("p0", "n2"), ("p1", "n3")}


def test_a_creating_table_activates_once_every_replica_is_ready() -> None:
    assert next_transition(table(), ALL_READY) == "activate"
    assert next_transition(table(), ALL_READY | {("p9", "n9")}) == "activate"


@pytest.mark.parametrize("missing", sorted(ALL_READY))
def test_a_creating_table_waits_for_each_missing_replica(missing: tuple[str, str]) -> None:
    assert next_transition(table(), ALL_READY - {missing}) is None


def test_a_replica_ready_for_another_partition_does_not_count() -> None:
    assert next_transition(table(), {("p0", "n1"), ("p0", "n2"), ("p0", "n3")}) is None


def test_a_deleting_table_is_removed_once_no_replica_is_ready() -> None:
    assert next_transition(table(status="DELETING"), set()) == "remove"
    assert next_transition(table(status="DELETING"), {("p1", "n3")}) is None


@pytest.mark.parametrize("status", ["ACTIVE", "UPDATING"])
def test_stable_tables_have_no_transition(status: TableStatus) -> None:
    assert next_transition(table(status=status), ALL_READY) is None
    assert next_transition(table(status=status), set()) is None


async def _store_with(record: TableRecord, ready: set[tuple[str, str]]) -> MemoryControlStore:
    store = MemoryControlStore()
    await store.create_table(record)
    for partition_id, node in ready:
        await store.mark_ready(record.table_id, partition_id, node)
    return store


async def test_drive_lifecycle_activates_a_ready_table() -> None:
    store = await _store_with(table(), ALL_READY)
    assert await drive_lifecycle(store, await store.list_tables()) is True
    stored = await store.get_table("Orders")
    assert stored is not None and stored.status == "ACTIVE"


async def test_drive_lifecycle_leaves_a_table_that_is_not_ready() -> None:
    store = await _store_with(table(), ALL_READY - {("p1", "n3")})
    assert await drive_lifecycle(store, await store.list_tables()) is False
    stored = await store.get_table("Orders")
    assert stored is not None and stored.status == "CREATING"


async def test_drive_lifecycle_removes_a_deleting_table_without_replicas() -> None:
    store = await _store_with(table(status="DELETING"), set())
    assert await drive_lifecycle(store, await store.list_tables()) is True
    assert await store.get_table("Orders") is None


async def test_drive_lifecycle_waits_while_a_replica_of_a_deleting_table_remains() -> None:
    store = await _store_with(table(status="DELETING"), {("p0", "n2")})
    assert await drive_lifecycle(store, await store.list_tables()) is False
    assert await store.get_table("Orders") is not None


async def test_drive_lifecycle_handles_several_tables_in_one_pass() -> None:
    store = MemoryControlStore()
    await store.create_table(table("A", 1))
    await store.create_table(table("B", 3, "DELETING"))
    await store.create_table(table("C", 5, "ACTIVE"))
    for p, n in ALL_READY:
        await store.mark_ready(1, p, n)
    assert await drive_lifecycle(store, await store.list_tables())
    assert {t.name: t.status for t in await store.list_tables()} == {"A": "ACTIVE", "C": "ACTIVE"}


async def test_a_transition_from_a_stale_record_loses_the_cas_and_reports_no_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await _store_with(table(), ALL_READY)
    stale = await store.list_tables()
    # Another driver moves the table first.
    assert await drive_lifecycle(store, stale) is True
    current = await store.get_table("Orders")
    assert current is not None
    await store.replace_table(current.with_status("DELETING"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="partita.autoadmin.lifecycle"):
        assert await drive_lifecycle(store, stale) is False
    after = await store.get_table("Orders")
    assert after is not None and after.status == "DELETING"
    assert not any("is ACTIVE" in r.getMessage() for r in caplog.records)


async def test_a_removal_from_a_stale_record_loses_the_cas(caplog: pytest.LogCaptureFixture) -> None:
    store = await _store_with(table(status="DELETING"), set())
    stale = await store.list_tables()
    current = await store.get_table("Orders")
    assert current is not None
    await store.replace_table(current)  # any write moves the revision on
    with caplog.at_level(logging.INFO, logger="partita.autoadmin.lifecycle"):
        assert await drive_lifecycle(store, stale) is False
    assert await store.get_table("Orders") is not None
    assert not any("is deleted" in r.getMessage() for r in caplog.records)
