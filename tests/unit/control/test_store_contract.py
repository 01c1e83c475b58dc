"""What every ControlStore promises, checked against each implementation: the
in-memory one the unit tests use and EtcdControlStore on a real etcd. The table
catalog's promises (what routers use) are checked against the Kubernetes catalog too,
with kmock as the API server (tests/unit/control/kube_api.py)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any, Protocol

import aetcd
import pytest

from partita.common.partition_map import Partition
from partita.control.kubernetes import KubernetesTableCatalog
from partita.control.model import (
    NO_REVISION,
    NodeLoad,
    NodeRecord,
    PartitionStats,
    ReplicaLoad,
    ReplicaMove,
    SplitParent,
    TableSpec,
    TableState,
)
from partita.control.store import (
    LOADS,
    PLACEMENTS,
    PREFIX,
    STATS,
    ControlStore,
    EtcdControlStore,
    MemoryControlStore,
)
from tests.unit.autoadmin.kube.emulator import NS, register_resources
from tests.unit.control.conftest import TWO_PARTITIONS, table
from tests.unit.control.kube_api import VersionedApiServer


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
    await raw.delete_prefix(LOADS)
    await raw.delete(PLACEMENTS)
    await raw.close()
    s = EtcdControlStore("127.0.0.1", etcd_port)
    yield s
    await s.close()


# --- table catalog ------------------------------------------------------------------


class Catalog(Protocol):
    async def list_table_specs(self) -> list[TableSpec]: ...
    async def get_table_spec(self, name: str) -> TableSpec | None: ...
    async def create_table_spec(self, spec: TableSpec) -> bool: ...
    async def replace_table_spec(self, spec: TableSpec) -> bool: ...
    async def get_table_state(self, name: str) -> TableState | None: ...


@pytest.fixture(params=["memory", "etcd", "kubernetes"])
def catalog_kind(request: pytest.FixtureRequest) -> tuple[str, int | None]:
    """The implementation, and the port of the session's real etcd for "etcd"."""
    port = int(request.getfixturevalue("etcd").port) if request.param == "etcd" else None
    return request.param, port


@pytest.fixture
async def catalog(catalog_kind: tuple[str, int | None], kmock: Any) -> AsyncIterator[Catalog]:
    kind, port = catalog_kind
    if kind != "kubernetes":
        async for store in _store(port):
            yield store
        return
    register_resources(kmock)
    kube = KubernetesTableCatalog(str(kmock.url), NS)
    yield kube
    await kube.close()


async def _store(etcd_port: int | None) -> AsyncIterator[ControlStore]:
    if etcd_port is None:
        yield MemoryControlStore()
        return
    raw = aetcd.Client(host="127.0.0.1", port=etcd_port, timeout=5)
    await raw.delete_prefix(PREFIX)
    await raw.delete_prefix(STATS)
    await raw.close()
    s = EtcdControlStore("127.0.0.1", etcd_port)
    yield s
    await s.close()


KUBE = pytest.mark.kmock(cls=VersionedApiServer)


@KUBE
async def test_create_table_spec_is_create_if_absent(catalog: Catalog) -> None:
    assert await catalog.create_table_spec(table(table_id=11)) is True
    assert await catalog.create_table_spec(table(table_id=13)) is False
    stored = await catalog.get_table_spec("Orders")
    assert stored is not None
    assert stored == table(table_id=11)
    assert stored.revision != NO_REVISION
    assert await catalog.list_table_specs() == [table(table_id=11)]


@KUBE
async def test_get_table_spec_of_an_unknown_name_is_none(catalog: Catalog) -> None:
    assert await catalog.get_table_spec("Nope") is None
    assert await catalog.get_table_state("Nope") is None


@KUBE
async def test_replace_table_spec_is_a_compare_and_swap_on_the_revision(catalog: Catalog) -> None:
    await catalog.create_table_spec(table())
    first = await catalog.get_table_spec("Orders")
    assert first is not None
    assert await catalog.replace_table_spec(dataclasses.replace(first, read_capacity=9)) is True
    # `first` is stale now: its revision is not the stored one any more.
    assert await catalog.replace_table_spec(dataclasses.replace(first, deleting=True)) is False
    current = await catalog.get_table_spec("Orders")
    assert current is not None
    assert (current.read_capacity, current.deleting) == (9, False)
    assert current.revision != first.revision


@KUBE
async def test_two_writers_replacing_from_one_revision_one_wins(catalog: Catalog) -> None:
    """Two routers read the same spec and update it at once: the store, not the reader's
    own check, must refuse the second (the Kubernetes catalog relies on the API
    server's resourceVersion precondition here)."""
    await catalog.create_table_spec(table())
    first = await catalog.get_table_spec("Orders")
    assert first is not None
    results = await asyncio.gather(
        catalog.replace_table_spec(dataclasses.replace(first, read_capacity=7)),
        catalog.replace_table_spec(dataclasses.replace(first, read_capacity=8)),
    )
    assert sorted(results) == [False, True]
    current = await catalog.get_table_spec("Orders")
    assert current is not None and current.read_capacity == (7 if results[0] else 8)


@KUBE
async def test_replace_table_spec_of_a_missing_table_fails_and_creates_nothing(catalog: Catalog) -> None:
    # A spec never read from the store has no revision: the CAS must not turn into a create.
    assert await catalog.replace_table_spec(table()) is False
    assert await catalog.get_table_spec("Orders") is None


async def test_table_state_is_created_once_then_compared_and_swapped(store: ControlStore) -> None:
    creating = TableState("Orders", 11, "CREATING", 1)
    assert await store.put_table_state(creating) is True
    assert await store.put_table_state(creating) is False  # no revision: only if absent
    stored = await store.get_table_state("Orders")
    assert stored == creating and stored.revision != NO_REVISION
    assert await store.put_table_state(dataclasses.replace(stored, phase="ACTIVE")) is True
    assert await store.put_table_state(dataclasses.replace(stored, observed_generation=2)) is False
    assert await store.list_table_states() == [TableState("Orders", 11, "ACTIVE", 1)]


async def test_the_joined_view_carries_spec_state_and_partitions(store: ControlStore) -> None:
    await store.create_table_spec(table("A", 1))
    await store.create_table_spec(table("B", 2))
    await store.change_partitions(2, TWO_PARTITIONS, ())
    await store.put_table_state(TableState("B", 2, "ACTIVE", 1))
    by_name = {r.name: r for r in await store.list_tables()}
    assert (by_name["A"].status, by_name["A"].partitions) == ("CREATING", ())
    assert (by_name["B"].status, by_name["B"].partitions) == ("ACTIVE", TWO_PARTITIONS)


async def test_remove_table_needs_the_current_revision_and_takes_everything_of_it(
    store: ControlStore,
) -> None:
    await store.create_table_spec(table())
    first = await store.get_table_spec("Orders")
    assert first is not None
    await store.put_table_state(TableState("Orders", 11, "ACTIVE", 1))
    await store.change_partitions(11, TWO_PARTITIONS, ())
    assert await store.replace_table_spec(dataclasses.replace(first, deleting=True))
    assert await store.remove_table(first) is False
    current = await store.get_table_spec("Orders")
    assert current is not None
    assert await store.remove_table(current) is True
    assert await store.get_table_spec("Orders") is None
    assert await store.get_table_state("Orders") is None
    assert await store.list_partitions(11) == []
    assert await store.list_tables() == []
    assert await store.remove_table(current) is False  # a missing table reports failure


async def test_remove_table_removes_its_ready_markers_and_partitions_and_no_others(
    store: ControlStore,
) -> None:
    # Ids chosen so that one is a decimal prefix of the others.
    for name, table_id in (("A", 1), ("B", 13), ("C", 133)):
        await store.create_table_spec(table(name, table_id))
        await store.change_partitions(table_id, TWO_PARTITIONS, ())
        await store.mark_ready(table_id, "p0", "n1")
        await store.mark_ready(table_id, "p1", "n2")
    b = await store.get_table_spec("B")
    assert b is not None
    assert await store.remove_table(b)
    assert await store.list_ready(13) == set()
    assert await store.list_partitions(13) == []
    assert await store.list_ready(1) == {("p0", "n1"), ("p1", "n2")}
    assert await store.list_ready(133) == {("p0", "n1"), ("p1", "n2")}
    assert await store.list_partitions(133) == list(TWO_PARTITIONS)


# --- partition map --------------------------------------------------------------------


async def test_partitions_are_objects_of_their_own_listed_by_start(store: ControlStore) -> None:
    await store.change_partitions(5, TWO_PARTITIONS[::-1], ())
    await store.change_partitions(51, TWO_PARTITIONS[:1], ())
    assert await store.list_partitions(5) == list(TWO_PARTITIONS)
    assert await store.list_partitions(51) == list(TWO_PARTITIONS[:1])
    assert await store.list_partitions(6) == []


async def test_a_split_replaces_the_parent_with_its_markers_and_statistics(store: ControlStore) -> None:
    await store.change_partitions(5, TWO_PARTITIONS, ())
    await store.mark_ready(5, "p0", "n1")
    await store.mark_ready(5, "p1", "n2")
    await store.mark_ready(5, "p1-0", "n2")  # a partition whose id extends p1's
    await store.put_partition_stats(5, "p1", PartitionStats(4, 400, 1.0))
    await store.put_partition_stats(5, "p0", PartitionStats(2, 200, 1.0))
    children = (
        Partition("p1-0", 2**63, 3 * 2**62, ("n2",), "n2"),
        Partition("p1-1", 3 * 2**62, 2**64, ("n2",), "n2"),
    )
    root = SplitParent("p1", 4, 400)
    estimates = [
        ("p1-0", PartitionStats(2, 200, 1.0, estimated=True, parent=root)),
        ("p1-1", PartitionStats(2, 200, 1.0, estimated=True, parent=root)),
    ]
    await store.change_partitions(5, children, ["p1"], estimates)
    assert await store.list_partitions(5) == [TWO_PARTITIONS[0], *children]
    assert await store.list_ready(5) == {("p0", "n1"), ("p1-0", "n2")}
    assert await store.list_partition_stats(5) == {"p0": PartitionStats(2, 200, 1.0), **dict(estimates)}


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
    assert await store.list_all_partition_stats() == {51: {"p0": PartitionStats(7, 700, 20.0)}}


async def test_every_tables_statistics_come_in_one_listing_by_table(store: ControlStore) -> None:
    assert await store.list_all_partition_stats() == {}
    await store.put_partition_stats(5, "p0", PartitionStats(3, 300, 10.0))
    await store.put_partition_stats(5, "p1", PartitionStats(1, 99, 20.0))
    await store.put_partition_stats(51, "p0", PartitionStats(7, 700, 20.0))
    assert await store.list_all_partition_stats() == {
        5: {"p0": PartitionStats(3, 300, 10.0), "p1": PartitionStats(1, 99, 20.0)},
        51: {"p0": PartitionStats(7, 700, 20.0)},
    }


async def test_listings_follow_every_change_made_between_them(store: ControlStore) -> None:
    # Routers and nodes list the tables again and again; a listing must never be older
    # than the writes made before it (the etcd store re-reads only when the store moved).
    await store.create_table_spec(table("A", 1))
    await store.change_partitions(1, TWO_PARTITIONS[:1], ())
    assert [(r.name, r.status) for r in await store.list_tables()] == [("A", "CREATING")]
    assert [(r.name, r.status) for r in await store.list_tables()] == [("A", "CREATING")]
    await store.put_table_state(TableState("A", 1, "ACTIVE", 1))
    assert [(r.name, r.status) for r in await store.list_tables()] == [("A", "ACTIVE")]
    await store.change_partitions(1, TWO_PARTITIONS, ())
    (record,) = await store.list_tables()
    assert record.partitions == TWO_PARTITIONS
    spec = await store.get_table_spec("A")
    assert spec is not None
    assert await store.replace_table_spec(dataclasses.replace(spec, read_capacity=9))
    assert [s.read_capacity for s in await store.list_table_specs()] == [9]
    (record,) = await store.list_tables()
    assert record.read_capacity == 9
    # The specs listed carry the revision a compare-and-swap needs, the latest one.
    (listed,) = await store.list_table_specs()
    assert await store.replace_table_spec(dataclasses.replace(listed, write_capacity=3))
    (state,) = await store.list_table_states()
    assert await store.put_table_state(dataclasses.replace(state, observed_generation=2))
    assert [s.observed_generation for s in await store.list_table_states()] == [2]
    current = await store.get_table_spec("A")
    assert current is not None and await store.remove_table(current)
    assert await store.list_tables() == []
    assert await store.list_table_specs() == []
    assert await store.list_table_states() == []


async def test_remove_table_removes_its_statistics_and_no_others(store: ControlStore) -> None:
    for name, table_id in (("A", 1), ("B", 13), ("C", 133)):
        await store.create_table_spec(table(name, table_id))
        await store.put_partition_stats(table_id, "p0", PartitionStats(table_id, 1, 1.0))
    b = await store.get_table_spec("B")
    assert b is not None
    assert await store.remove_table(b)
    assert await store.list_partition_stats(13) == {}
    assert await store.list_partition_stats(1) == {"p0": PartitionStats(1, 1, 1.0)}
    assert await store.list_partition_stats(133) == {"p0": PartitionStats(133, 1, 1.0)}


# --- nodes ------------------------------------------------------------------------


async def test_a_drain_mark_is_listed_until_cleared(store: ControlStore) -> None:
    assert await store.list_draining() == frozenset()
    await store.set_draining("n1", True)
    await store.set_draining("n2", True)
    await store.set_draining("n1", True)  # idempotent
    assert await store.list_draining() == {"n1", "n2"}
    await store.set_draining("n2", False)
    await store.set_draining("n3", False)  # never marked: nothing to clear
    assert await store.list_draining() == {"n1"}
    await store.set_draining("n4", True, by="scale-down")
    assert await store.draining_marks() == {"n1": "hand", "n4": "scale-down"}


async def test_a_nodes_load_report_replaces_its_previous_one(store: ControlStore) -> None:
    assert await store.list_node_loads() == []
    first = NodeLoad("n2", 100.0, 10.0, 3000.0, 1000.0, (ReplicaLoad(5, "p0", 12.5, 3.0),))
    await store.put_node_load(first, ttl=30)
    await store.put_node_load(NodeLoad("n1", 100.0, 10.0, 3000.0, 1000.0), ttl=30)
    later = NodeLoad("n2", 110.0, 10.0, 3000.0, 1000.0, (ReplicaLoad(5, "p1", 1.0, 0.5),))
    await store.put_node_load(later, ttl=30)
    loads = await store.list_node_loads()
    assert [n.node_id for n in loads] == ["n1", "n2"]
    assert loads[1] == later


async def test_a_replica_move_is_listed_until_deleted(store: ControlStore) -> None:
    assert await store.list_moves() == []
    move = ReplicaMove(5, "p0", "n1", "n4", 100.0)
    await store.put_move(move)
    await store.put_move(ReplicaMove(6, "p0", "n2", "n5", 101.0))
    assert sorted(await store.list_moves(), key=lambda m: m.table_id) == [
        move,
        ReplicaMove(6, "p0", "n2", "n5", 101.0),
    ]
    await store.delete_move(6, "p0")
    await store.delete_move(7, "p0")  # never asked for: nothing to delete
    assert await store.list_moves() == [move]


async def test_registered_nodes_are_listed_by_id_and_reregistration_replaces(store: ControlStore) -> None:
    await store.register_node(NodeRecord("n2", "b", "h:2"), ttl=10)
    await store.register_node(NodeRecord("n1", "a", "h:1"), ttl=10)
    await store.register_node(NodeRecord("n2", "b", "h:22"), ttl=10)
    assert await store.list_nodes() == [NodeRecord("n1", "a", "h:1"), NodeRecord("n2", "b", "h:22")]


async def test_every_tables_replica_sets_come_in_one_listing_by_table(store: ControlStore) -> None:
    # What the autoadmin places a new table's shuffle shard against.
    assert await store.list_placements() == {}
    await store.change_partitions(5, TWO_PARTITIONS, ())
    built = dataclasses.replace(
        TWO_PARTITIONS[0], replicas=("n1", "n2"), joining=("n3",), log_replicas=("n4",)
    )
    await store.change_partitions(51, (built,), ())
    assert await store.list_placements() == {
        5: (frozenset({"n1"}), frozenset({"n2"})),
        51: (frozenset({"n1", "n2", "n3"}),),
    }


async def test_published_placements_read_back_as_published_and_replace_the_last(store: Any) -> None:
    assert await store.get_placements() == {}
    first = {7: (frozenset({"a", "b", "c"}), frozenset({"b", "c", "d"})), 9: (frozenset({"x"}),)}
    await store.put_placements(first)
    assert await store.get_placements() == first
    assert await store.get_placements() == first  # read again, unchanged
    await store.put_placements({9: (frozenset({"y", "z"}),)})
    assert await store.get_placements() == {9: (frozenset({"y", "z"}),)}
