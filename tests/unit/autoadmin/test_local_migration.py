"""The local autoadmin's migration checks against a control store: a hot node's replica
is asked to move, the move is forgotten once the group's leader has carried it out, and
nothing is read beyond the reports while no node is hot."""

from __future__ import annotations

import dataclasses

import pytest

from partita.autoadmin.local import LocalAutoadmin
from partita.autoadmin.migration import MigrationPolicy
from partita.common.metrics import REGISTRY
from partita.common.partition_map import HASH_SPACE, Partition
from partita.control.model import NodeLoad, NodeRecord, ReplicaLoad, ReplicaMove
from partita.control.store import MemoryControlStore

NOW = 5_000.0
TABLE = 7
P0 = Partition("p0", 0, HASH_SPACE // 2, ("a1", "b1", "c1"), leader="a1")
P1 = Partition("p1", HASH_SPACE // 2, HASH_SPACE, ("a1", "b1", "c1"), leader="b1")


class CountingStore(MemoryControlStore):
    def __init__(self) -> None:
        super().__init__()
        self.partition_reads = 0

    async def list_partitions(self, table_id: int) -> list[Partition]:
        self.partition_reads += 1
        return await super().list_partitions(table_id)

    async def list_placements(self) -> dict[int, tuple[frozenset[str], ...]]:
        self.partition_reads += 1
        return await super().list_placements()


async def cluster() -> CountingStore:
    store = CountingStore()
    for node, zone in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c")):
        await store.register_node(NodeRecord(node, zone, f"{node}:1"), ttl=10)
    await store.change_partitions(TABLE, [P0, P1], [])
    return store


def report(node: str, *replicas: ReplicaLoad, at: float = NOW) -> NodeLoad:
    return NodeLoad(node, at, 10.0, 1000.0, 500.0, replicas)


def autoadmin(store: MemoryControlStore, policy: MigrationPolicy | None = None) -> LocalAutoadmin:
    return LocalAutoadmin(store, migration=policy, wall_clock=lambda: NOW)


def moves_counted(action: str, reason: str) -> float:
    return (
        REGISTRY.get_sample_value("partita_autoadmin_actions_total", {"action": action, "reason": reason})
        or 0.0
    )


async def test_a_hot_nodes_replica_is_asked_to_move_and_forgotten_once_moved() -> None:
    store = await cluster()
    await store.put_node_load(
        report("a1", ReplicaLoad(TABLE, "p0", 500.0, 0.0), ReplicaLoad(TABLE, "p1", 350.0, 0.0)), 30
    )
    await store.put_node_load(report("a2"), 30)
    started = moves_counted("move_replica", "node_hot")
    await autoadmin(store).migrate_once()
    assert await store.list_moves() == [ReplicaMove(TABLE, "p0", "a1", "a2", NOW)]
    assert moves_counted("move_replica", "node_hot") == started + 1
    assert REGISTRY.get_sample_value("partita_autoadmin_hot_nodes") == 1.0
    # The check after, with the move under way: nothing more is asked of a1 or a2.
    await autoadmin(store).migrate_once()
    assert len(await store.list_moves()) == 1
    # The group's leader built a2's member and removed a1's.
    moved = dataclasses.replace(P0, replicas=("a2", "b1", "c1"), leader="b1")
    await store.change_partitions(TABLE, [moved], [])
    ended = moves_counted("end_move", "done")
    admin = autoadmin(store)
    await admin.migrate_once()
    assert await store.list_moves() == []
    assert moves_counted("end_move", "done") == ended + 1
    # a1's and a2's reports are from before the move: no other move on them ...
    await admin.migrate_once()
    assert await store.list_moves() == []
    # ... until they report again, a1 still too busy with p1 alone.
    later = NOW + 30
    admin.wall_clock = lambda: later
    await store.put_node_load(report("a1", ReplicaLoad(TABLE, "p1", 850.0, 0.0), at=later), 30)
    await store.put_node_load(report("a2", ReplicaLoad(TABLE, "p0", 100.0, 0.0), at=later), 30)
    await admin.migrate_once()
    assert await store.list_moves() == []  # p1 would fill a2 past the room share
    assert REGISTRY.get_sample_value("partita_autoadmin_hot_nodes_without_room") == 1.0


async def test_a_move_leaving_the_tables_shard_keeps_other_tables_partitions_within_the_bound() -> None:
    # a2 and a3 are both outside table 7's shard (a1, b1, c1). Table 8's partition has a
    # replica on a2 and one on b1: a2 would give table 7's nodes two of its three, so
    # the move goes to a3, though a3 is the busier.
    store = await cluster()
    await store.register_node(NodeRecord("a3", "a", "a3:1"), ttl=10)
    await store.change_partitions(8, [Partition("p0", 0, HASH_SPACE, ("a2", "b1", "c9"), leader="a2")], [])
    await store.put_node_load(
        report("a1", ReplicaLoad(TABLE, "p0", 500.0, 0.0), ReplicaLoad(TABLE, "p1", 350.0, 0.0)), 30
    )
    await store.put_node_load(report("a2"), 30)
    await store.put_node_load(report("a3", ReplicaLoad(9, "p0", 50.0, 0.0)), 30)
    await autoadmin(store).migrate_once()
    assert [(m.partition_id, m.target) for m in await store.list_moves()] == [("p0", "a3")]


async def test_no_partition_is_read_while_no_node_is_hot_and_no_move_is_under_way() -> None:
    store = await cluster()
    await store.put_node_load(report("a1", ReplicaLoad(TABLE, "p0", 100.0, 0.0)), 30)
    await autoadmin(store).migrate_once()
    assert store.partition_reads == 0 and await store.list_moves() == []


async def test_stale_reports_and_disabled_migration_ask_for_nothing() -> None:
    store = await cluster()
    hot = report(
        "a1", ReplicaLoad(TABLE, "p0", 500.0, 0.0), ReplicaLoad(TABLE, "p1", 350.0, 0.0), at=NOW - 3600
    )
    await store.put_node_load(hot, 30)
    await store.put_node_load(report("a2"), 30)
    await autoadmin(store).migrate_once()
    assert await store.list_moves() == []
    await store.put_node_load(dataclasses.replace(hot, measured_at=NOW), 30)
    await autoadmin(store, MigrationPolicy(enabled=False)).migrate_once()
    assert await store.list_moves() == []


async def test_a_check_is_made_once_per_interval() -> None:
    store = await cluster()
    now = [0.0]
    admin = LocalAutoadmin(store, migration_interval=10.0, clock=lambda: now[0], wall_clock=lambda: NOW)
    assert await admin.migrate_if_due()
    now[0] = 5.0
    assert not await admin.migrate_if_due()
    now[0] = 10.0
    assert await admin.migrate_if_due()


def test_a_room_share_at_or_above_the_hot_share_is_refused() -> None:
    with pytest.raises(ValueError):
        MigrationPolicy(above=0.6, room_below=0.6)
