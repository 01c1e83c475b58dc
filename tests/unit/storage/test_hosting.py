"""Which partitions a node serves, and which tables' data it must drop (pure)."""

from __future__ import annotations

from partita.common.partition_map import Partition, split_evenly
from partita.control.model import KeyElement, TableRecord, TableStatus
from partita.storage.hosting import HostedTable, desired_hosting, tables_to_drop

END = 2**64


def record(
    table_id: int,
    replicas: list[tuple[str, ...]],
    status: TableStatus = "ACTIVE",
    name: str | None = None,
) -> TableRecord:
    partitions = tuple(
        Partition(f"p{i}", start, end, reps, reps[0])
        for i, ((start, end), reps) in enumerate(zip(split_evenly(len(replicas)), replicas, strict=True))
    )
    return TableRecord(
        name=name or f"t{table_id}",
        table_id=table_id,
        status=status,
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
        partitions=partitions,
    )


def test_hosted_table_keeps_only_this_nodes_partitions_in_hash_order() -> None:
    r = record(1, [("a",), ("b",), ("a", "c"), ("b",)])
    hosted = HostedTable.of(r, "a")
    assert [p.partition_id for p in hosted.partitions] == ["p0", "p2"]
    assert hosted.starts == (0, END // 2)


def test_owner_of_finds_the_hosted_partition_at_both_edges_of_its_range() -> None:
    r = record(1, [("a",), ("b",), ("a",), ("b",)])
    hosted = HostedTable.of(r, "a")
    p0, p2 = r.partitions[0], r.partitions[2]
    assert hosted.owner_of(0) == p0
    assert hosted.owner_of(p0.end - 1) == p0
    assert hosted.owner_of(p2.start) == p2
    assert hosted.owner_of(p2.end - 1) == p2


def test_owner_of_is_none_for_hashes_in_partitions_hosted_elsewhere() -> None:
    r = record(1, [("b",), ("a",), ("b",)])
    hosted = HostedTable.of(r, "a")
    p1 = r.partitions[1]
    assert hosted.owner_of(0) is None  # before the first hosted start
    assert hosted.owner_of(p1.start - 1) is None
    assert hosted.owner_of(p1.end) is None  # after the hosted range, same bisect slot
    assert hosted.owner_of(END - 1) is None


def test_owner_of_covers_the_top_of_the_hash_space() -> None:
    hosted = HostedTable.of(record(1, [("b",), ("a",)]), "a")
    assert hosted.owner_of(END - 1) is not None


def test_desired_hosting_includes_creating_and_active_tables_with_a_replica_here() -> None:
    tables = [
        record(1, [("a",), ("b",)], "ACTIVE"),
        record(3, [("a",)], "CREATING"),
        record(5, [("b",)], "ACTIVE"),
        record(7, [("a",)], "DELETING"),
    ]
    hosting = desired_hosting(tables, "a")
    assert set(hosting) == {1, 3}
    assert [p.partition_id for p in hosting[1].partitions] == ["p0"]
    assert hosting[3].record is tables[1]


def test_desired_hosting_of_a_node_without_replicas_is_empty() -> None:
    assert desired_hosting([record(1, [("b",)])], "a") == {}


def test_a_deleting_table_with_a_replica_here_is_dropped_even_without_known_data() -> None:
    tables = [record(7, [("a",)], "DELETING"), record(9, [("b",)], "DELETING")]
    assert tables_to_drop(tables, set(), "a") == [7]


def test_data_of_a_table_gone_from_the_store_is_dropped() -> None:
    tables = [record(1, [("a",)])]
    assert tables_to_drop(tables, {1, 11, 13}, "a") == [11, 13]


def test_live_tables_are_never_dropped_even_when_hosted_elsewhere() -> None:
    tables = [record(1, [("a",)]), record(3, [("b",)], "CREATING"), record(5, [("b",)], "UPDATING")]
    assert tables_to_drop(tables, {1, 3, 5}, "a") == []


def test_data_of_a_deleting_table_hosted_elsewhere_is_dropped_too() -> None:
    # Left behind by a move, say: the table is going away, so the data goes too.
    tables = [record(9, [("b",)], "DELETING")]
    assert tables_to_drop(tables, {9}, "a") == [9]
