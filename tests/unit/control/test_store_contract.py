"""What every ControlStore promises, checked against each implementation: the
in-memory one the unit tests use and EtcdControlStore on a real etcd. The Kubernetes
store will join this list."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aetcd
import pytest

from partita.control.model import NodeRecord, PartitionStats
from partita.control.store import PREFIX, STATS, ControlStore, EtcdControlStore, MemoryControlStore
from tests.unit.control.conftest import table


@pytest.fixture(params=["memory", "etcd"])
def etcd_port(request: pytest.FixtureRequest) -> int | None:
    """None for the in-memory store; the port of the session's real etcd otherwise."""
    return int(request.getfixturevalue("etcd").port) if request.param == "etcd" else None


@pytest.fixture
async def store(etcd_port: int | None) -> AsyncIterator[ControlStore]:
    if etcd_port is None:
        yield MemoryControlStore()
        return
    raw = aetcd.Client(host="127.0.0.1", port=etcd_port, timeout=5)
    await raw.delete_prefix(PREFIX)  # each test starts from an empty store
    await raw.delete_prefix(STATS)
    await raw.close()
    s = EtcdControlStore("127.0.0.1", etcd_port)
    yield s
    await s.close()


# --- tables -----------------------------------------------------------------------


async def test_create_table_is_create_if_absent(store: ControlStore) -> None:
    assert await store.create_table(table(table_id=11)) is True
    assert await store.create_table(table(table_id=13)) is False
    stored = await store.get_table("Orders")
    assert stored is not None
    assert stored == table(table_id=11)
    assert stored.revision > 0
    assert await store.list_tables() == [table(table_id=11)]


async def test_get_table_of_an_unknown_name_is_none(store: ControlStore) -> None:
    assert await store.get_table("Nope") is None


async def test_replace_table_is_a_compare_and_swap_on_the_revision(store: ControlStore) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    assert await store.replace_table(first.with_status("ACTIVE")) is True
    # `first` is stale now: its revision is not the stored one any more.
    assert await store.replace_table(first.with_status("DELETING")) is False
    current = await store.get_table("Orders")
    assert current is not None
    assert current.status == "ACTIVE"
    assert current.revision > first.revision


async def test_replace_table_of_a_missing_table_fails_and_creates_nothing(store: ControlStore) -> None:
    # A record never read from the store has revision 0, which is also the mod
    # revision etcd reports for a missing key: the CAS must not turn into a create.
    assert await store.replace_table(table()) is False
    assert await store.get_table("Orders") is None


async def test_remove_table_needs_the_current_revision(store: ControlStore) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    assert await store.replace_table(first.with_status("DELETING"))
    assert await store.remove_table(first) is False
    current = await store.get_table("Orders")
    assert current is not None
    assert await store.remove_table(current) is True
    assert await store.get_table("Orders") is None
    assert await store.remove_table(current) is False  # a missing table reports failure


async def test_remove_table_removes_its_ready_markers_and_no_others(store: ControlStore) -> None:
    # Ids chosen so that one is a decimal prefix of the others.
    for name, table_id in (("A", 1), ("B", 13), ("C", 133)):
        await store.create_table(table(name, table_id))
        await store.mark_ready(table_id, "p0", "n1")
        await store.mark_ready(table_id, "p1", "n2")
    b = await store.get_table("B")
    assert b is not None
    assert await store.remove_table(b)
    assert await store.list_ready(13) == set()
    assert await store.list_ready(1) == {("p0", "n1"), ("p1", "n2")}
    assert await store.list_ready(133) == {("p0", "n1"), ("p1", "n2")}


async def test_ready_markers_are_set_listed_and_cleared_per_table(store: ControlStore) -> None:
    await store.mark_ready(5, "0000000000000005-0000", "node-a")
    await store.mark_ready(5, "0000000000000005-0001", "node-b")
    await store.mark_ready(5, "0000000000000005-0001", "node-b")  # idempotent
    await store.mark_ready(51, "p0", "node-a")
    assert await store.list_ready(5) == {
        ("0000000000000005-0000", "node-a"),
        ("0000000000000005-0001", "node-b"),
    }
    await store.clear_ready(5, "0000000000000005-0000", "node-a")
    await store.clear_ready(5, "p9", "n9")  # clearing what is not there is fine
    assert await store.list_ready(5) == {("0000000000000005-0001", "node-b")}
    assert await store.list_ready(51) == {("p0", "node-a")}


# --- partition statistics ---------------------------------------------------------


async def test_partition_stats_are_kept_per_table_and_the_latest_wins(store: ControlStore) -> None:
    await store.put_partition_stats(5, "p0", PartitionStats(3, 300, 10.0))
    await store.put_partition_stats(5, "p0", PartitionStats(4, 410, 20.0))
    await store.put_partition_stats(5, "p1", PartitionStats(1, 99, 20.0))
    await store.put_partition_stats(51, "p0", PartitionStats(7, 700, 20.0))
    assert await store.list_partition_stats(5) == {
        "p0": PartitionStats(4, 410, 20.0),
        "p1": PartitionStats(1, 99, 20.0),
    }
    assert await store.list_partition_stats(51) == {"p0": PartitionStats(7, 700, 20.0)}
    assert await store.list_partition_stats(6) == {}
    await store.clear_partition_stats(5)
    assert await store.list_partition_stats(5) == {}
    assert await store.list_partition_stats(51) == {"p0": PartitionStats(7, 700, 20.0)}


async def test_remove_table_removes_its_statistics_and_no_others(store: ControlStore) -> None:
    for name, table_id in (("A", 1), ("B", 13), ("C", 133)):
        await store.create_table(table(name, table_id))
        await store.put_partition_stats(table_id, "p0", PartitionStats(table_id, 1, 1.0))
    b = await store.get_table("B")
    assert b is not None
    assert await store.remove_table(b)
    assert await store.list_partition_stats(13) == {}
    assert await store.list_partition_stats(1) == {"p0": PartitionStats(1, 1, 1.0)}
    assert await store.list_partition_stats(133) == {"p0": PartitionStats(133, 1, 1.0)}


# --- nodes ------------------------------------------------------------------------


async def test_registered_nodes_are_listed_by_id_and_reregistration_replaces(store: ControlStore) -> None:
    await store.register_node(NodeRecord("n2", "b", "h:2"), ttl=10)
    await store.register_node(NodeRecord("n1", "a", "h:1"), ttl=10)
    await store.register_node(NodeRecord("n2", "b", "h:22"), ttl=10)
    assert await store.list_nodes() == [NodeRecord("n1", "a", "h:1"), NodeRecord("n2", "b", "h:22")]
